-- Change capture for Parley's local Realtime server, installed by the server itself at startup
-- (hosted Supabase Realtime reads the WAL instead; a project's own migrations never create this).
--
-- Every table in the `supabase_realtime` publication gets an AFTER ROW trigger that appends the
-- row images to `parley_realtime.changes` and NOTIFYs only "<change id>,<table oid>,<I|U|D>",
-- so rows of any size survive NOTIFY's 8 kB payload limit. Re-running this file is harmless.

CREATE SCHEMA IF NOT EXISTS parley_realtime;
COMMENT ON SCHEMA parley_realtime IS
    'Change capture of Parley''s local Realtime server; safe to drop (DROP SCHEMA ... CASCADE).';
REVOKE ALL ON SCHEMA parley_realtime FROM PUBLIC;

CREATE TABLE IF NOT EXISTS parley_realtime.changes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    relid oid NOT NULL,
    action "char" NOT NULL CHECK (action IN ('I', 'U', 'D')),
    record jsonb,
    old_record jsonb,
    captured_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
REVOKE ALL ON parley_realtime.changes FROM PUBLIC;

-- SECURITY DEFINER: writers of any role (authenticated users included) must be able to log.
-- timezone UTC: to_jsonb() renders timestamptz like the real server's UTC session does.
CREATE OR REPLACE FUNCTION parley_realtime.capture() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' SET timezone = 'UTC' AS $fn$
DECLARE
    change_id bigint;
BEGIN
    INSERT INTO parley_realtime.changes (relid, action, record, old_record)
    VALUES (
        TG_RELID,
        left(TG_OP, 1)::"char",
        CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END,
        CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END
    )
    RETURNING id INTO change_id;
    PERFORM pg_notify('parley_realtime', change_id || ',' || TG_RELID || ',' || left(TG_OP, 1));
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION parley_realtime.capture() FROM PUBLIC;

-- Give every published table the capture trigger and take it off tables that left the
-- publication. Returns the oids of the captured tables. The trigger is a deferred constraint
-- trigger: it fires as the transaction commits, so `captured_at` is (within microseconds) the
-- commit time the real server reports, and a rolled-back transaction logs nothing.
CREATE OR REPLACE FUNCTION parley_realtime.sync_triggers(publication name) RETURNS oid[]
LANGUAGE plpgsql SET search_path = '' AS $fn$
DECLARE
    t record;
BEGIN
    FOR t IN  -- triggers of an older install fired immediately: replace them
        SELECT g.tgrelid::regclass AS entity FROM pg_catalog.pg_trigger g
         WHERE g.tgname = 'parley_realtime_capture' AND NOT g.tginitdeferred
    LOOP
        EXECUTE format('DROP TRIGGER parley_realtime_capture ON %s', t.entity);
    END LOOP;
    -- Published tables by oid (`pg_get_publication_tables`), never by casting names to
    -- regclass: the planner may cast every pg_class row, and a role that is no superuser has
    -- no USAGE on pg_toast.
    FOR t IN
        SELECT p.relid::regclass AS entity
          FROM pg_catalog.pg_get_publication_tables(publication::text) p
         WHERE NOT EXISTS (
               SELECT 1 FROM pg_catalog.pg_trigger g
                WHERE g.tgrelid = p.relid AND g.tgname = 'parley_realtime_capture')
    LOOP
        EXECUTE format('CREATE CONSTRAINT TRIGGER parley_realtime_capture '
                       'AFTER INSERT OR UPDATE OR DELETE ON %s DEFERRABLE INITIALLY DEFERRED '
                       'FOR EACH ROW EXECUTE FUNCTION parley_realtime.capture()', t.entity);
    END LOOP;
    FOR t IN
        SELECT g.tgrelid::regclass AS entity
          FROM pg_catalog.pg_trigger g
         WHERE g.tgname = 'parley_realtime_capture'
           AND g.tgfoid = 'parley_realtime.capture()'::regprocedure
           AND g.tgrelid NOT IN (
               SELECT p.relid FROM pg_catalog.pg_get_publication_tables(publication::text) p)
    LOOP
        EXECUTE format('DROP TRIGGER parley_realtime_capture ON %s', t.entity);
    END LOOP;
    RETURN ARRAY(
        SELECT g.tgrelid FROM pg_catalog.pg_trigger g
         WHERE g.tgname = 'parley_realtime_capture'
           AND g.tgfoid = 'parley_realtime.capture()'::regprocedure
         ORDER BY 1);
END
$fn$;
REVOKE ALL ON FUNCTION parley_realtime.sync_triggers(name) FROM PUBLIC;
