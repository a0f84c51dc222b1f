"""Delegations stored once: a step's task without what its step row says.

The task a step's agent is handed opens with the plan's goal, the step's description and its
tools, which the plan and step rows hold; after that come the results of the steps it depends
on, cut to the agent's budget (`shared/agents/prompts.py`, `delegation`). A `delegation` row of
`agent_chat_messages` now stores only that rest — nothing, for a step without dependencies —
and readers put the opening back from the thread's run, its step and plan
(`shared/db/delegations.py`), as `session_timeline` does here. Rows stored before hold the
whole text (it starts with the opening) and are read as they are: nothing is rewritten.

A `postgres_changes` subscriber of `agent_chat_messages` sees a new delegation row's stored
rest; the `agent_message` event carries the whole text.

Downgrade writes the whole text back into every delegation row stored without it, then
restores the view.

Revision ID: 5a0c1e2b0706
Revises: 5a0c1e2b0705
Create Date: 2026-11-29 09:50:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0706"
down_revision: str | None = "5a0c1e2b0705"
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
"""A dialogue row's content, a delegation's whole (`shared.db.delegations.delegation`)."""

STEPS = "public.agent_plan_steps s WHERE s.plan_id = m.plan_id"
PLAN_RESULTS = f"""coalesce((SELECT string_agg(concat_ws(E'\\n',
        'Step ' || s.step_number || ': ' || s.status, 'Result: ' || nullif(s.result, ''),
        'Problem: ' || nullif(s.error, '')), E'\\n' ORDER BY s.step_number)
    FROM {STEPS}), '')"""
"""A plan's results as the planner was given them (revision 5a0c1e2b0704)."""
STORED_RESULTS = """m.role = 'tool' AND m.content = '' AND m.metadata->>'kind' = 'plan_results'"""

TIMELINE = """
CREATE OR REPLACE VIEW public.session_timeline WITH (security_invoker = true) AS
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id,
       CASE WHEN {stored_results} THEN {plan_results} ELSE m.content END AS content,
       m.tool_name, m.model, m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id,
       m.created_at
  FROM public.chat_messages m
UNION ALL
SELECT d.session_id, d.seq, 'agent'::text, d.id,
       d.message_type, coalesce(a.role, 'system'), d.sender_agent_id,
       d.agent_session_id, d.plan_id, {dialogue} AS content, d.tool_name, d.model,
       NULL::integer, NULL::integer, NULL::numeric(14, 6), d.user_id, d.created_at
  FROM public.agent_chat_messages d
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
"""
"""`session_timeline` as revision 5a0c1e2b0704 made it, the dialogue's `content` given."""


def timeline(dialogue: str) -> str:
    return TIMELINE.format(
        stored_results=STORED_RESULTS, plan_results=PLAN_RESULTS, dialogue=dialogue
    )


def upgrade() -> None:
    op.execute(timeline(WHOLE))


def downgrade() -> None:
    op.execute(
        f"""UPDATE public.agent_chat_messages d SET content = {WHOLE}
            WHERE d.message_type = 'delegation'
              AND left(d.content, {len(OPENING)}) <> '{OPENING}'"""
    )
    op.execute(timeline("d.content"))
