-- What Broadcast from Database and private channels rest on: `realtime.messages` (RLS on,
-- partitioned by day on `inserted_at`), `realtime.topic()`, `realtime.send()` and
-- `realtime.broadcast_changes()`. A Supabase project has them all, and so does a database
-- migrated by Parley; on any other plain Postgres the local server creates what is missing,
-- as the hosted tenant schema has it (github.com/supabase/realtime,
-- priv/repo/tenant_schema/realtime/). Existing objects are never replaced.

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
            binary_payload bytea
        ) PARTITION BY RANGE (inserted_at);
        COMMENT ON TABLE realtime.messages IS 'created by parley local realtime';
        ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
        ALTER TABLE realtime.messages ADD CONSTRAINT messages_payload_exclusive
            CHECK (payload IS NULL OR binary_payload IS NULL) NOT VALID;
        ALTER TABLE realtime.messages ADD CONSTRAINT messages_pkey PRIMARY KEY (id, inserted_at);
        CREATE INDEX messages_inserted_at_topic_index ON ONLY realtime.messages
            USING btree (inserted_at DESC, topic) WHERE extension = 'broadcast' AND private IS TRUE;
        IF to_regrole('authenticated') IS NOT NULL THEN
            GRANT INSERT, SELECT, UPDATE ON realtime.messages TO anon, authenticated, service_role;
        END IF;
    END IF;

    IF to_regprocedure('realtime.topic()') IS NULL THEN
        CREATE FUNCTION realtime.topic() RETURNS text LANGUAGE sql STABLE AS
            $fn$ SELECT nullif(current_setting('realtime.topic', true), '')::text $fn$;
    END IF;

    IF to_regprocedure('realtime.send(jsonb, text, text, boolean)') IS NULL THEN
        CREATE FUNCTION realtime.send(payload jsonb, event text, topic text,
                                      private boolean DEFAULT true)
        RETURNS void LANGUAGE plpgsql AS $fn$
        DECLARE
          generated_id uuid;
          final_payload jsonb;
        BEGIN
          BEGIN
            generated_id := gen_random_uuid();
            IF payload ? 'id' THEN
              final_payload := payload;
            ELSE
              final_payload := jsonb_set(payload, '{id}', to_jsonb(generated_id));
            END IF;
            EXECUTE format('SET LOCAL realtime.topic TO %L', topic);
            INSERT INTO realtime.messages (id, payload, event, topic, private, extension)
            VALUES (generated_id, final_payload, event, topic, private, 'broadcast');
          EXCEPTION
            WHEN OTHERS THEN
              RAISE WARNING 'WarnSendingBroadcastMessage: %', SQLERRM;
          END;
        END;
        $fn$;
    END IF;

    IF to_regprocedure(
        'realtime.broadcast_changes(text, text, text, text, text, record, record, text)'
    ) IS NULL THEN
        CREATE FUNCTION realtime.broadcast_changes(
            topic_name text, event_name text, operation text, table_name text,
            table_schema text, new record, old record, level text DEFAULT 'ROW'::text)
        RETURNS void LANGUAGE plpgsql AS $fn$
        DECLARE
            row_data jsonb := '{}'::jsonb;
        BEGIN
            IF level = 'STATEMENT' THEN
                RAISE EXCEPTION 'function can only be triggered for each row, not for each statement';
            END IF;
            IF operation = 'INSERT' OR operation = 'UPDATE' OR operation = 'DELETE' THEN
                row_data := jsonb_build_object('old_record', OLD, 'record', NEW,
                                               'operation', operation, 'table', table_name,
                                               'schema', table_schema);
                PERFORM realtime.send (row_data, event_name, topic_name);
            ELSE
                RAISE EXCEPTION 'Unexpected operation type: %', operation;
            END IF;
        EXCEPTION
            WHEN OTHERS THEN
                RAISE EXCEPTION 'Failed to process the row: %', SQLERRM;
        END;
        $fn$;
    END IF;
END
$messages$;
