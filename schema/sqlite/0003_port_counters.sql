-- subnetd store, schema version 3: port counter history (the performance
-- manager, issue 16).
--
-- One row holds the change of a port's counters over `seconds` from `at`
-- (unix seconds), data in bytes. Two levels, each pruned by age so the file
-- never grows without bound (daemon/store_counters.cpp):
--   level 0  one row per counter sweep, only for ports whose error counters
--            rose: errors are rare, and every port every minute would be
--            1.4 billion rows a day at 1M ports;
--   level 1  one row per port and hour (`at` the hour's start), the sum of
--            that hour's deltas, for the ports with new errors and the
--            busiest ports of each sweep (perfmgr keeps the top 1000).
-- Integers are SQLite's 64-bit signed: counters past 2^63 wrap to negative
-- here (at 400 Gb/s, in 5,800 years).
CREATE TABLE port_counters (
  node_guid INTEGER NOT NULL,
  port INTEGER NOT NULL CHECK (port BETWEEN 0 AND 255),
  level INTEGER NOT NULL CHECK (level IN (0, 1)),
  at INTEGER NOT NULL,
  seconds REAL NOT NULL,
  symbol_errors INTEGER NOT NULL,
  link_recovers INTEGER NOT NULL,
  link_downed INTEGER NOT NULL,
  rcv_errors INTEGER NOT NULL,
  rcv_remote_phys INTEGER NOT NULL,
  rcv_switch_relay INTEGER NOT NULL,
  xmit_discards INTEGER NOT NULL,
  xmit_constraint INTEGER NOT NULL,
  rcv_constraint INTEGER NOT NULL,
  link_integrity INTEGER NOT NULL,
  buffer_overrun INTEGER NOT NULL,
  vl15_dropped INTEGER NOT NULL,
  xmit_wait INTEGER NOT NULL,
  xmit_bytes INTEGER NOT NULL,
  rcv_bytes INTEGER NOT NULL,
  xmit_pkts INTEGER NOT NULL,
  rcv_pkts INTEGER NOT NULL,
  PRIMARY KEY (node_guid, port, level, at)
) WITHOUT ROWID;

CREATE INDEX port_counters_age ON port_counters (level, at);
