"""Realtime: private `session:<id>` channels for their owners, full rows for filtered deletes.

Parley broadcasts a session's events on the private channel `session:<session_id>`. Supabase
authorises private channels with RLS on `realtime.messages`, reading the channel from
`realtime.topic()`: this revision lets an authenticated user read (never write) the broadcast
channels of their own sessions. On plain Postgres it first creates the `realtime` schema,
`realtime.messages` and `realtime.topic()` as the Supabase tenant schema has them (marked, and
only when missing), so the policy exists before the local Realtime server starts.

`REPLICA IDENTITY FULL` on the message tables makes DELETE changes carry the whole old row, so
a `postgres_changes` subscription filtered by `session_id` also sees deletes.

Revision ID: 8d4e5a2b0301
Revises: 7c3d4f1a0201
Create Date: 2026-11-23 12:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "8d4e5a2b0301"
down_revision: str | None = "7c3d4f1a0201"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MARK = "created by parley supabase-compat"

UPGRADE = f"""
DO $realtime$
BEGIN
    IF to_regnamespace('realtime') IS NULL THEN
        CREATE SCHEMA realtime;
        COMMENT ON SCHEMA realtime IS '{MARK}';
        GRANT USAGE ON SCHEMA realtime TO anon, authenticated, service_role;
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
        COMMENT ON TABLE realtime.messages IS '{MARK}';
        ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
        GRANT INSERT, SELECT, UPDATE ON realtime.messages TO anon, authenticated, service_role;
    END IF;

    IF to_regprocedure('realtime.topic()') IS NULL THEN
        CREATE FUNCTION realtime.topic() RETURNS text LANGUAGE sql STABLE AS
            $fn$ SELECT nullif(current_setting('realtime.topic', true), '')::text $fn$;
        COMMENT ON FUNCTION realtime.topic() IS '{MARK}';
    END IF;
END
$realtime$;

CREATE POLICY parley_read_own_session_channels ON realtime.messages
    FOR SELECT TO authenticated
    USING (
        realtime.messages.extension = 'broadcast'
        AND EXISTS (
            SELECT 1 FROM public.chat_sessions s
             WHERE s.user_id = (SELECT auth.uid())
               AND 'session:' || s.id::text = (SELECT realtime.topic())
        )
    );

ALTER TABLE public.chat_messages REPLICA IDENTITY FULL;
ALTER TABLE public.agent_chat_messages REPLICA IDENTITY FULL;
"""

DOWNGRADE = f"""
ALTER TABLE public.agent_chat_messages REPLICA IDENTITY DEFAULT;
ALTER TABLE public.chat_messages REPLICA IDENTITY DEFAULT;
DROP POLICY parley_read_own_session_channels ON realtime.messages;

DO $realtime$
BEGIN
    IF to_regprocedure('realtime.topic()') IS NOT NULL
       AND obj_description('realtime.topic()'::regprocedure, 'pg_proc') = '{MARK}' THEN
        DROP FUNCTION realtime.topic();
    END IF;
    IF obj_description('realtime.messages'::regclass, 'pg_class') = '{MARK}' THEN
        DROP TABLE realtime.messages;
    END IF;
    IF obj_description(to_regnamespace('realtime'), 'pg_namespace') = '{MARK}'
       AND NOT EXISTS (SELECT FROM pg_class WHERE relnamespace = to_regnamespace('realtime'))
       AND NOT EXISTS (SELECT FROM pg_proc WHERE pronamespace = to_regnamespace('realtime')) THEN
        DROP SCHEMA realtime;
    END IF;
END
$realtime$;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
