-- What private channels are authorised against on Supabase: `realtime.messages` (RLS on) and
-- `realtime.topic()`. A Supabase project already has both; on plain Postgres the local server
-- creates them, only when missing, with the columns and grants of the hosted tenant schema
-- (github.com/supabase/realtime, priv/repo/tenant_schema/realtime/). Unlike hosted, the table
-- is not partitioned: the local server never stores messages in it, it only probes policies.

DO $messages$
BEGIN
    IF to_regnamespace('realtime') IS NULL THEN
        CREATE SCHEMA realtime;
        COMMENT ON SCHEMA realtime IS 'created by parley local realtime';
        GRANT USAGE ON SCHEMA realtime TO PUBLIC;  -- like Supabase: every API role uses it
    END IF;

    IF to_regclass('realtime.messages') IS NULL THEN
        CREATE TABLE realtime.messages (
            topic text NOT NULL,
            extension text NOT NULL,
            payload jsonb,
            event text,
            private boolean DEFAULT false,
            updated_at timestamp without time zone NOT NULL DEFAULT now(),
            inserted_at timestamp without time zone NOT NULL DEFAULT now(),
            id uuid NOT NULL DEFAULT gen_random_uuid(),
            binary_payload bytea,
            PRIMARY KEY (id, inserted_at)
        );
        COMMENT ON TABLE realtime.messages IS 'created by parley local realtime';
        ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
        IF to_regrole('authenticated') IS NOT NULL THEN
            GRANT INSERT, SELECT, UPDATE ON realtime.messages TO anon, authenticated, service_role;
        END IF;
    END IF;

    IF to_regprocedure('realtime.topic()') IS NULL THEN
        CREATE FUNCTION realtime.topic() RETURNS text LANGUAGE sql STABLE AS
            $fn$ SELECT nullif(current_setting('realtime.topic', true), '')::text $fn$;
    END IF;
END
$messages$;
