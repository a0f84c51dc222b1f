"""A step's task held by its run: no dialogue row for a delegation.

Every step attempt opens with a delegation — the planner handing the step's task to the
step's agent — which was a row of `agent_chat_messages` (a row header, ids, a number and two
index entries: ~250 bytes a step), though revision 5a0c1e2b0706 left it holding only what its
step and plan rows do not say. The run of the attempt (`agent_executions`, whose id is the
thread's) now holds it: `delegation_seq`, the number its `agent_message` event carries, and
`delegation_rest`, the dependencies' results after the opening (NULL when there are none).
Readers of the dialogue read the rows and those runs together (`shared/db/delegations.py`,
`DIALOGUE`): each run with a `delegation_seq` is its thread's first row, a `delegation` with the
run's id. `session_timeline` does here. Delegation rows stored before stay rows and are read as
they are (nothing is rewritten); a step's task is kept as long as its run
(`RETENTION_EXECUTIONS_DAYS`).

Downgrade writes each run's delegation back as a row (whole) and drops the columns.

Revision ID: 5a0c1e2b0708
Revises: 5a0c1e2b0707
Create Date: 2026-11-29 10:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0708"
down_revision: str | None = "5a0c1e2b0707"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPENING_TEXT = "Goal of the plan: "
GONE = "(The task of this step is no longer stored: retention deleted the run it was given to.)"
OPENING = f"""concat('{OPENING_TEXT}',
    coalesce(nullif(p.goal, ''), nullif(u.content, ''), 'see the step'),
    E'\\n\\nYour step: ', s.description,
    CASE WHEN cardinality(s.tools) > 0
         THEN E'\\nTools for this step: ' || array_to_string(s.tools, ', ') END)"""
"""A delegation's opening from its step `s`, plan `p` and request `u` (`prompts.delegation`)."""
WHOLE = f"""CASE WHEN d.message_type = 'delegation'
        AND left(d.content, {len(OPENING_TEXT)}) <> '{OPENING_TEXT}'
    THEN coalesce((
        SELECT {OPENING}
        FROM public.agent_executions e
        JOIN public.agent_plan_steps s ON s.id = e.step_id
        JOIN public.agent_plans p ON p.id = s.plan_id
        LEFT JOIN public.chat_messages u ON u.id = p.user_message_id
        WHERE e.id = d.agent_session_id), '{GONE}') || d.content
    ELSE d.content END"""
"""A dialogue row's content, a delegation's whole (revision 5a0c1e2b0706)."""
HELD = f"""
    SELECT e.id, e.id AS agent_session_id, e.plan_id, p.session_id, e.user_id,
           e.delegation_seq AS seq, p.planner_agent_id AS sender_agent_id,
           e.agent_id AS receiver_agent_id, 'delegation' AS message_type,
           {OPENING} || coalesce(e.delegation_rest, '') AS content, e.created_at
      FROM public.agent_executions e
      JOIN public.agent_plans p ON p.id = e.plan_id
      JOIN public.agent_plan_steps s ON s.id = e.step_id
      LEFT JOIN public.chat_messages u ON u.id = p.user_message_id
     WHERE e.delegation_seq IS NOT NULL"""
"""The delegations the runs hold, as dialogue rows (`shared.db.delegations.DIALOGUE`)."""

STEPS = "public.agent_plan_steps s WHERE s.plan_id = m.plan_id"
PLAN_RESULTS = f"""coalesce((SELECT string_agg(concat_ws(E'\\n',
        'Step ' || s.step_number || ': ' || s.status, 'Result: ' || nullif(s.result, ''),
        'Problem: ' || nullif(s.error, '')), E'\\n' ORDER BY s.step_number)
    FROM {STEPS}), '')"""
STORED_RESULTS = """m.role = 'tool' AND m.content = '' AND m.metadata->>'kind' = 'plan_results'"""
CHAT = f"""
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id,
       CASE WHEN {STORED_RESULTS} THEN {PLAN_RESULTS} ELSE m.content END AS content,
       m.tool_name, m.model, m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id,
       m.created_at
  FROM public.chat_messages m"""
AGENT = """
SELECT p.session_id, d.seq, 'agent'::text, d.id,
       d.message_type, coalesce(a.role, 'system'), d.sender_agent_id,
       d.agent_session_id, d.plan_id, {content}, d.tool_name, d.model,
       NULL::integer, NULL::integer, NULL::numeric(14, 6), d.user_id, d.created_at
  FROM public.agent_plans p JOIN {dialogue} ON d.plan_id = p.id
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id"""
TIMELINE = "CREATE OR REPLACE VIEW public.session_timeline WITH (security_invoker = true) AS"

UPGRADE = f"""
ALTER TABLE public.agent_executions
    ADD COLUMN delegation_seq bigint,
    ADD COLUMN delegation_rest text;
COMMENT ON COLUMN public.agent_executions.delegation_seq IS
    'A step attempt''s delegation (its thread''s first message, id = this run''s): its seq.';
COMMENT ON COLUMN public.agent_executions.delegation_rest IS
    'What the delegation says after the opening its step and plan hold: the results of the '
    'steps it depends on (NULL: nothing).';
{TIMELINE}
{CHAT}
UNION ALL
{AGENT.format(content=f"{WHOLE} AS content", dialogue="public.agent_chat_messages d")}
UNION ALL
SELECT d.session_id, d.seq, 'agent'::text, d.id, d.message_type, coalesce(a.role, 'system'),
       d.sender_agent_id, d.agent_session_id, d.plan_id, d.content, NULL, NULL,
       NULL::integer, NULL::integer, NULL::numeric(14, 6), d.user_id, d.created_at
  FROM ({HELD}) d
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
"""

DOWNGRADE = f"""
INSERT INTO public.agent_chat_messages (id, agent_session_id, plan_id, session_id, user_id,
    seq, sender_agent_id, receiver_agent_id, message_type, content, created_at)
SELECT * FROM ({HELD}) d;
{TIMELINE}
{CHAT}
UNION ALL
{AGENT.format(content=f"{WHOLE} AS content", dialogue="public.agent_chat_messages d")};
ALTER TABLE public.agent_executions DROP COLUMN delegation_seq, DROP COLUMN delegation_rest;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
