-- subnetd store, schema version 2: event ids come from the daemon.
--
-- Applied by daemon/store.cpp like 0001 (one transaction, then
-- PRAGMA user_version = 2). A version-1 store keeps every row; only the
-- trigger below is added.
--
-- Why. Version 1 let AUTOINCREMENT number the events, while the daemon's
-- EventLog numbers them too (those are the ids WatchEvents streams and
-- resumes from). One failed write (disk full, a busy lock) left the store one
-- id behind the EventLog until the next restart, so a client resuming from an
-- id it had been streamed was served other events. Since version 2 the store
-- inserts the EventLog's id as given: a failed write leaves a gap, never a
-- shift.
--
-- The trigger keeps the promise AUTOINCREMENT made before: an event id is
-- never reused, not even one that pruning has deleted. sqlite_sequence still
-- holds the highest id ever stored (SQLite raises it on explicit ids too), so
-- an insert must name an id above it. An insert without an id is refused as
-- well: a BEFORE trigger sees NEW.id = -1 for a rowid still to be chosen.
-- daemon/store.cpp turns the abort into a message that names the id.
CREATE TRIGGER events_ids_only_grow
BEFORE INSERT ON events
WHEN NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)
BEGIN
  SELECT RAISE(ABORT, 'events: id not above the highest event id ever stored');
END;
