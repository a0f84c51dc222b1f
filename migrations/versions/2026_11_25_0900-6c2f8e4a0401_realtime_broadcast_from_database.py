"""Realtime: Broadcast from Database on plain Postgres, as Supabase has it.

Supabase's Realtime service owns `realtime.messages` (partitioned by day on `inserted_at`),
`realtime.send()` and `realtime.broadcast_changes()`; a project's transaction calls `send()` to
broadcast exactly when it commits. On a Supabase project this revision changes nothing. On
plain Postgres, where revision 8d4e5a2b0301 created a plain `realtime.messages` to carry the
channel policies, it rebuilds that table the way Supabase creates it (same columns, defaults,
check, primary key, replay index, grants, RLS), moves its rows and recreates every policy on it,
and adds the two functions with Supabase's signatures, bodies and privileges (EXECUTE stays with
PUBLIC, as on Supabase: `send()` runs with the caller's rights, so the INSERT policies on
`realtime.messages` decide who may broadcast where).

Partitions are the Realtime service's job (the local server creates yesterday's to three days
ahead and drops those past retention, like hosted); this revision creates the same window so a
database can take messages before the server first starts.

Revision ID: 6c2f8e4a0401
Revises: 3f8a9c2d0301
Create Date: 2026-11-25 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "6c2f8e4a0401"
down_revision: str | None = "3f8a9c2d0301"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MARK = "created by parley supabase-compat"
#: The local Realtime server's mark, on a table it created before the migrations ran.
SERVER_MARK = "created by parley local realtime"


def rebuild_messages(*, partitioned: bool) -> str:
    """SQL rebuilding Parley's own `realtime.messages` (partitioned or plain), rows and
    policies kept; a no-op for a table Parley did not create or that already has that form."""
    current = "r" if partitioned else "p"  # the form to rebuild from
    partitioning = "PARTITION BY RANGE (inserted_at)" if partitioned else ""
    replay_index = (
        "CREATE INDEX messages_inserted_at_topic_index ON ONLY realtime.messages "
        "USING btree (inserted_at DESC, topic) "
        "WHERE extension = 'broadcast' AND private IS TRUE;"
        if partitioned
        else ""
    )
    partitions = (
        """
        FOR day IN
            SELECT DISTINCT inserted_at::date FROM realtime.messages_rebuilt
            UNION
            SELECT generate_series(today - 1, today + 3, interval '1 day')::date
        LOOP
            EXECUTE format(
                'CREATE TABLE realtime.%I PARTITION OF realtime.messages FOR VALUES FROM (%L) TO (%L)',
                'messages_' || to_char(day, 'YYYY_MM_DD'), day, day + 1);
        END LOOP;"""
        if partitioned
        else ""
    )
    return f"""
DO $rebuild$
DECLARE
    note text := obj_description(to_regclass('realtime.messages'), 'pg_class');
    today date := (now() AT TIME ZONE 'UTC')::date;
    policies text[];
    statement text;
    day date;
BEGIN
    IF note IS DISTINCT FROM '{MARK}' AND note IS DISTINCT FROM '{SERVER_MARK}'
       OR (SELECT relkind FROM pg_class WHERE oid = 'realtime.messages'::regclass) <> '{current}'
    THEN
        RETURN;
    END IF;
    -- Deparsed while the table still has its name, so references to it read back the same.
    SELECT coalesce(array_agg(format(
               'CREATE POLICY %I ON realtime.messages AS %s FOR %s TO %s%s%s',
               policyname, permissive, cmd,
               (SELECT string_agg(quote_ident(role), ', ') FROM unnest(roles) AS role),
               ' USING (' || qual || ')', ' WITH CHECK (' || with_check || ')')), '{{}}')
      INTO policies
      FROM pg_policies WHERE schemaname = 'realtime' AND tablename = 'messages';

    ALTER TABLE realtime.messages RENAME TO messages_rebuilt;
    ALTER TABLE realtime.messages_rebuilt RENAME CONSTRAINT messages_pkey TO messages_rebuilt_pkey;
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
    ) {partitioning};
    EXECUTE format('COMMENT ON TABLE realtime.messages IS %L', note);
    ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
    ALTER TABLE realtime.messages ADD CONSTRAINT messages_payload_exclusive
        CHECK (payload IS NULL OR binary_payload IS NULL) NOT VALID;
    ALTER TABLE realtime.messages ADD CONSTRAINT messages_pkey PRIMARY KEY (id, inserted_at);
    {replay_index}
    IF to_regrole('authenticated') IS NOT NULL THEN
        GRANT INSERT, SELECT, UPDATE ON realtime.messages TO anon, authenticated, service_role;
    END IF;
    {partitions}
    INSERT INTO realtime.messages (topic, extension, payload, event, private, updated_at,
                                   inserted_at, id, binary_payload)
        SELECT topic, extension, payload, event, private, updated_at, inserted_at, id,
               binary_payload
          FROM realtime.messages_rebuilt;
    DROP TABLE realtime.messages_rebuilt;
    FOREACH statement IN ARRAY policies LOOP
        EXECUTE statement;
    END LOOP;
END
$rebuild$;
"""


FUNCTIONS = f"""
DO $functions$
BEGIN
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
              final_payload := jsonb_set(payload, '{{id}}', to_jsonb(generated_id));
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
        COMMENT ON FUNCTION realtime.send(jsonb, text, text, boolean) IS '{MARK}';
    END IF;

    IF to_regprocedure(
        'realtime.broadcast_changes(text, text, text, text, text, record, record, text)'
    ) IS NULL THEN
        CREATE FUNCTION realtime.broadcast_changes(
            topic_name text, event_name text, operation text, table_name text,
            table_schema text, new record, old record, level text DEFAULT 'ROW'::text)
        RETURNS void LANGUAGE plpgsql AS $fn$
        DECLARE
            row_data jsonb := '{{}}'::jsonb;
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
        COMMENT ON FUNCTION
            realtime.broadcast_changes(text, text, text, text, text, record, record, text)
            IS '{MARK}';
    END IF;
END
$functions$;
"""

DROP_FUNCTIONS = f"""
DO $functions$
DECLARE
    fn regprocedure;
BEGIN
    FOREACH fn IN ARRAY ARRAY[
        to_regprocedure('realtime.broadcast_changes(text, text, text, text, text, record, record, text)'),
        to_regprocedure('realtime.send(jsonb, text, text, boolean)')
    ] LOOP
        IF fn IS NOT NULL AND obj_description(fn, 'pg_proc') = '{MARK}' THEN
            EXECUTE format('DROP FUNCTION %s', fn);
        END IF;
    END LOOP;
END
$functions$;
"""


def upgrade() -> None:
    op.execute(rebuild_messages(partitioned=True))
    op.execute(FUNCTIONS)


def downgrade() -> None:
    op.execute(DROP_FUNCTIONS)
    op.execute(rebuild_messages(partitioned=False))
