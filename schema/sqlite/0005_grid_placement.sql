-- subnetd store, schema version 5: where each switch sat in the grid the
-- last routes were computed on (routing/grid_placement.hpp).
--
-- On a torus or mesh routed in dimension order, a LID's SL follows its
-- switch's grid coordinates. Canonical coordinates start from the switch
-- of least GUID, so a daemon that restarted while that switch was dead
-- would place the grid afresh and move most SLs, leaving the hosts'
-- PathRecords stale. The daemon writes the placement after each heavy
-- sweep that changed it and gives it to the first computation after a
-- start. One placement at most: both tables are emptied and written in
-- one transaction (daemon/store_grid.cpp); routes on no grid leave them
-- empty.
CREATE TABLE grid_dimensions (
  dim INTEGER PRIMARY KEY CHECK (dim BETWEEN 0 AND 63),
  size INTEGER NOT NULL CHECK (size BETWEEN 2 AND 16777215),
  wrap INTEGER NOT NULL CHECK (wrap IN (0, 1))
);

-- A switch's coordinate along one dimension; every switch of the grid has
-- a row for each dimension.
CREATE TABLE grid_switches (
  node_guid INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  pos INTEGER NOT NULL CHECK (pos >= 0),
  PRIMARY KEY (node_guid, dim)
) WITHOUT ROWID;
