-- How the local server hears of new `realtime.messages` rows (hosted streams them through a
-- logical replication slot): an AFTER INSERT trigger NOTIFYs channel `parley_realtime_messages`.
-- NOTIFY is sent at commit and in commit order, so a message goes out exactly when its
-- transaction commits. The notice carries the whole message while it fits NOTIFY's 8000 bytes;
-- a larger (or binary) one carries only its key and the server reads the row.
-- Any database login may LISTEN, so the payload is visible to database logins (as the rows are
-- to the table's owner); this trigger exists only where the local server runs, never on
-- Supabase, whose client roles reach the database through the API, not as logins.
-- Installed by the server into its own schema `parley_realtime`; re-running this is harmless.

CREATE OR REPLACE FUNCTION parley_realtime.announce_message() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $fn$
DECLARE
    notice text := json_build_object(
        'id', NEW.id, 'inserted_at', NEW.inserted_at, 'topic', NEW.topic, 'event', NEW.event,
        'private', NEW.private, 'payload', NEW.payload)::text;
BEGIN
    IF NEW.binary_payload IS NOT NULL OR octet_length(notice) > 7900 THEN
        notice := json_build_object('id', NEW.id, 'inserted_at', NEW.inserted_at)::text;
    END IF;
    PERFORM pg_notify('parley_realtime_messages', notice);
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION parley_realtime.announce_message() FROM PUBLIC;

-- Only broadcasts: the presence rows hosted writes are never streamed either.
CREATE OR REPLACE TRIGGER parley_realtime_announce
    AFTER INSERT ON realtime.messages
    FOR EACH ROW WHEN (NEW.extension = 'broadcast')
    EXECUTE FUNCTION parley_realtime.announce_message();
