-- subnetd store, schema version 1.
--
-- Applied by daemon/store.cpp inside one transaction, which then sets
-- PRAGMA user_version = 1. Migrations are append-only: never edit a released
-- file; add 0002_<what>.sql with the next number instead.
--
-- Conventions
--   * Times are INTEGER microseconds since the Unix epoch (UTC).
--   * GUIDs are the 64-bit GUID stored as a signed INTEGER (two's complement,
--     so GUIDs >= 2^63 read back negative in the sqlite3 shell);
--     printf('0x%016x', port_guid) shows the usual hex form.
--   * JSON columns are checked with json_valid().

-- GUID -> LID map: the LIDs a port keeps across sweeps and daemon restarts.
-- One row per CA/router port and per switch port 0. The store keeps LID
-- ranges [base_lid, base_lid + 2^lmc) disjoint across rows: saving a port's
-- range removes any other port's row that overlaps it.
CREATE TABLE lids (
  port_guid  INTEGER PRIMARY KEY,
  base_lid   INTEGER NOT NULL CHECK (base_lid BETWEEN 1 AND 0xFFFFFF),
  lmc        INTEGER NOT NULL DEFAULT 0 CHECK (lmc BETWEEN 0 AND 7),
  node_guid  INTEGER,
  updated_at INTEGER NOT NULL
);
CREATE INDEX lids_by_base ON lids (base_lid);

-- One row per finished sweep (heavy: full discovery + routing; light: the
-- periodic cheap check). AUTOINCREMENT so ids are never reused after pruning.
CREATE TABLE sweeps (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at INTEGER NOT NULL,
  ended_at   INTEGER NOT NULL,
  kind       TEXT    NOT NULL CHECK (kind IN ('heavy', 'light')),
  nodes      INTEGER NOT NULL DEFAULT 0,
  switches   INTEGER NOT NULL DEFAULT 0,
  cas        INTEGER NOT NULL DEFAULT 0,
  lids       INTEGER NOT NULL DEFAULT 0,
  -- Phase durations in microseconds, in execution order:
  -- {"discover": 8123, "lids": 95, "route": 3120, "verify": 410, "program": 2210}
  phases     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(phases)),
  outcome    TEXT    NOT NULL CHECK (outcome IN ('ok', 'failed', 'cancelled')),
  message    TEXT    NOT NULL DEFAULT ''
);

-- Event log: link_down, link_up, reroute, sweep, config_reload, error,
-- port_disable, port_enable, switch_down, switch_up, sm_state, ...
-- AUTOINCREMENT so an event id is never reused: WatchEvents resumes from one.
-- `kind` is not constrained here so new kinds need no table rebuild; the
-- daemon validates it.
CREATE TABLE events (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  ts        INTEGER NOT NULL,
  kind      TEXT    NOT NULL,
  node_guid INTEGER,
  port      INTEGER CHECK (port IS NULL OR port BETWEEN 0 AND 255),
  message   TEXT    NOT NULL DEFAULT '',
  details   TEXT    CHECK (details IS NULL OR json_valid(details))
);
