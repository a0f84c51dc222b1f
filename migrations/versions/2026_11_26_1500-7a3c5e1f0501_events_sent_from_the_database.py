"""Events sent from the database, in the transaction that stores their rows.

* `parley_private.send_events(session, events, private, base, totals)` sends a list of Parley
  events (docs/events.md) to the session's Realtime channel `session:<id>` with
  `realtime.send()` — Broadcast from Database: each becomes a `realtime.messages` row of the
  caller's transaction, delivered by Realtime once (and only if) it commits. An event gets its
  `seq` one of three ways: given (an event about a stored row carries the row's); a `slot`, an
  offset from `base` (a statement that reserved numbers for its rows and events at once); or,
  with neither, the session's next number. An event naming `totals_at` gets the plan totals
  `totals` (jsonb) at `data.<totals_at>`; one without a `session_id` gets `session` (a
  statement that learns the session as it runs). Returns the events' seqs, in order.
* `assign_session_seq` (the trigger numbering `chat_messages` and `agent_chat_messages`) keeps
  a `seq` the inserting statement gave if it was reserved already — a statement that reserved
  a block of numbers for its rows and events writes them itself, so the session's counter row
  is updated once — and numbers any other row as before: a `seq` past the counter is never
  taken as given. (Only the service inserts these rows; no client role may.)

Both live in `parley_private`, executable by the owner and `service_role` only.

Revision ID: 7a3c5e1f0501
Revises: 2c8f4e7a0502
Create Date: 2026-11-26 15:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "7a3c5e1f0501"
down_revision: str | None = "2c8f4e7a0502"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ASSIGN_SEQ = """
CREATE OR REPLACE FUNCTION parley_private.assign_session_seq() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    {numbering}
    RETURN NEW;
END
$$;
"""
ALLOCATE = "NEW.seq := parley_private.allocate_session_seq(NEW.session_id, 1);"
KEEP_RESERVED = f"""IF NEW.seq IS NULL OR NEW.seq < 1 OR NEW.seq > (
        SELECT last_seq FROM public.chat_sessions WHERE id = NEW.session_id) THEN
        {ALLOCATE}
    END IF;"""

UPGRADE = f"""
{ASSIGN_SEQ.format(numbering=KEEP_RESERVED)}

CREATE FUNCTION parley_private.send_events(
    p_session uuid, p_events jsonb, p_private boolean,
    p_base bigint DEFAULT NULL, p_totals jsonb DEFAULT NULL)
RETURNS bigint[] LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
    e jsonb;
    seqs bigint[] := '{{}}';
    topic text := 'session:' || p_session;
BEGIN
    FOR e IN SELECT value FROM jsonb_array_elements(p_events) WITH ORDINALITY ORDER BY ordinality
    LOOP
        IF e ? 'slot' THEN
            e := jsonb_set(e - 'slot', '{{seq}}', to_jsonb(p_base + (e->>'slot')::bigint));
        ELSIF jsonb_typeof(e->'seq') IS DISTINCT FROM 'number' THEN
            e := jsonb_set(e, '{{seq}}',
                           to_jsonb(parley_private.allocate_session_seq(p_session, 1)));
        END IF;
        IF e->>'session_id' IS NULL THEN
            e := jsonb_set(e, '{{session_id}}', to_jsonb(p_session::text));
        END IF;
        IF e ? 'totals_at' THEN
            e := jsonb_set(e - 'totals_at', ARRAY['data', e->>'totals_at'],
                           coalesce(p_totals, 'null'::jsonb));
        END IF;
        seqs := seqs || (e->>'seq')::bigint;
        PERFORM realtime.send(e, e->>'type', topic, p_private);
    END LOOP;
    RETURN seqs;
END
$$;
COMMENT ON FUNCTION parley_private.send_events(uuid, jsonb, boolean, bigint, jsonb) IS
    'Send Parley events to session:<id> with realtime.send() in the caller''s transaction.';
REVOKE ALL ON FUNCTION parley_private.send_events(uuid, jsonb, boolean, bigint, jsonb)
    FROM PUBLIC, anon, authenticated;
GRANT EXECUTE ON FUNCTION parley_private.send_events(uuid, jsonb, boolean, bigint, jsonb)
    TO service_role;
"""

DOWNGRADE = f"""
DROP FUNCTION parley_private.send_events(uuid, jsonb, boolean, bigint, jsonb);
{ASSIGN_SEQ.format(numbering=ALLOCATE)}
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
