"""The agents' dialogue found by its turns: no index of it by session.

`agent_chat_messages` had a unique index on `(session_id, seq)`, for one reader: a session's
timeline in `seq` order. Sessions' rows interleave in it, so it grew faster than the table's
other indexes (173 bytes a turn at 100,000 turns, 240 at 1,000,000: `docs/storage.md`). It is
dropped. The timeline finds a page's dialogue through the plans that can hold rows in the
page's range (`shared/db/timeline.py`); `session_timeline` joins the dialogue to the session
through its plans (a session's plans by `agent_plans_session_idx`, a plan's rows by
`agent_chat_messages_plan_idx`). The foreign key from the dialogue to the session goes too:
a session's dialogue is deleted with its plans (each row's plan is in the row's session), so
deleting a session never reads the whole dialogue. The numbers stay unique by construction:
every row takes its number from the session's counter (`chat_sessions.last_seq`), under the
session row's lock.

Downgrade restores the key and the index (it fails if two rows of a session share a number).

Revision ID: 5a0c1e2b0707
Revises: 5a0c1e2b0706
Create Date: 2026-11-29 10:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0707"
down_revision: str | None = "5a0c1e2b0706"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPENING = "Goal of the plan: "
GONE = "(The task of this step is no longer stored: retention deleted the run it was given to.)"
WHOLE = f"""CASE WHEN d.message_type = 'delegation'
        AND left(d.content, {len(OPENING)}) <> '{OPENING}'
    THEN coalesce((
        SELECT concat('{OPENING}',
            coalesce(nullif(p.goal, ''), nullif(u.content, ''), 'see the step'),
            E'\\n\\nYour step: ', s.description,
            CASE WHEN cardinality(s.tools) > 0
                 THEN E'\\nTools for this step: ' || array_to_string(s.tools, ', ') END)
        FROM public.agent_executions e
        JOIN public.agent_plan_steps s ON s.id = e.step_id
        JOIN public.agent_plans p ON p.id = s.plan_id
        LEFT JOIN public.chat_messages u ON u.id = p.user_message_id
        WHERE e.id = d.agent_session_id), '{GONE}') || d.content
    ELSE d.content END"""
"""A dialogue row's content, a delegation's whole (revision 5a0c1e2b0706)."""

STEPS = "public.agent_plan_steps s WHERE s.plan_id = m.plan_id"
PLAN_RESULTS = f"""coalesce((SELECT string_agg(concat_ws(E'\\n',
        'Step ' || s.step_number || ': ' || s.status, 'Result: ' || nullif(s.result, ''),
        'Problem: ' || nullif(s.error, '')), E'\\n' ORDER BY s.step_number)
    FROM {STEPS}), '')"""
STORED_RESULTS = """m.role = 'tool' AND m.content = '' AND m.metadata->>'kind' = 'plan_results'"""

TIMELINE = f"""
CREATE OR REPLACE VIEW public.session_timeline WITH (security_invoker = true) AS
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id,
       CASE WHEN {STORED_RESULTS} THEN {PLAN_RESULTS} ELSE m.content END AS content,
       m.tool_name, m.model, m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id,
       m.created_at
  FROM public.chat_messages m
UNION ALL
SELECT {{session}}, d.seq, 'agent'::text, d.id,
       d.message_type, coalesce(a.role, 'system'), d.sender_agent_id,
       d.agent_session_id, d.plan_id, {WHOLE} AS content, d.tool_name, d.model,
       NULL::integer, NULL::integer, NULL::numeric(14, 6), d.user_id, d.created_at
  FROM {{dialogue}}
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
"""
"""`session_timeline`: the dialogue's session given (and where it comes from)."""

UPGRADE = f"""
ALTER TABLE public.agent_chat_messages
    DROP CONSTRAINT agent_chat_messages_session_id_seq_key,
    DROP CONSTRAINT agent_chat_messages_session_id_fkey;
{
    TIMELINE.format(
        session="p.session_id",
        dialogue="public.agent_plans p JOIN public.agent_chat_messages d ON d.plan_id = p.id",
    )
}
"""

DOWNGRADE = f"""
ALTER TABLE public.agent_chat_messages
    ADD CONSTRAINT agent_chat_messages_session_id_seq_key UNIQUE (session_id, seq),
    ADD CONSTRAINT agent_chat_messages_session_id_fkey FOREIGN KEY (session_id)
        REFERENCES public.chat_sessions (id) ON DELETE CASCADE;
{TIMELINE.format(session="d.session_id", dialogue="public.agent_chat_messages d")}
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
