-- subnetd store, schema version 4: the fault policy's audit (issue 16).
--
-- One row per automatic action (or an operator's return of an isolated
-- link): 'isolate' (the port disabled), 'refuse' (over a limit, left in
-- service as isolating it would cut endpoints off), 'restore' (back in
-- service). `at` and `until_at` are unix microseconds. The link is named
-- by the end the policy disables and its peer. A daemon that starts reads
-- the links whose last isolate/restore row is an isolation: they stay
-- isolated until their hold-down ends. Pruned to the newest 100,000 rows
-- (daemon/store_health.cpp).
CREATE TABLE health_actions (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  node_guid INTEGER NOT NULL,
  port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 255),
  peer_guid INTEGER NOT NULL,
  peer_port INTEGER NOT NULL CHECK (peer_port BETWEEN 1 AND 255),
  action TEXT NOT NULL CHECK (action IN ('isolate', 'refuse', 'restore')),
  cause TEXT NOT NULL,
  reason TEXT NOT NULL,
  who TEXT NOT NULL,
  until_at INTEGER
);

CREATE INDEX health_actions_link ON health_actions (node_guid, port, peer_guid, peer_port, id);
