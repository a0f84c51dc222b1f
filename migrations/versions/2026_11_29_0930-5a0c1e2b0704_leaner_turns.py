"""Leaner turns: what a turn stores once, not twice.

* **A write's receipt names its result's row.** `parley_private.tool_call_receipts` keeps a
  write call's result from the write's own transaction until the row answering the call (the
  planner's `tool` message, an agent's `tool_result`) is stored; the statement storing that row
  clears the receipt's copy when it is exactly what the row holds, and readers take the result
  from the row (`shared/db/receipts.py`). A receipt may so be done (`completed_at`) without a
  `result`: the check that tied them together now only says a result means done.

* **A plan is stored once.** The planner's accepted `create_plan` call is stored without its
  `steps` (its row's `metadata.plan_steps` names the call), and that call's result — the steps'
  outcomes, `plan_results` — with an empty `content`: both are the plan's step rows, read back
  by the planner's history (`shared/agents/history.py`), by the API's readers
  (`shared/db/chats.py`) and by `session_timeline` (here).

Deployments upgrading keep their data: rows and receipts written before keep their copies
(readers take either). Downgrade writes the copies back: every receipt its result (from its
row, or a note that it is gone when retention deleted the row), every accepted plan's call
its steps and its result its text.

Revision ID: 5a0c1e2b0704
Revises: 5a0c1e2b0703
Create Date: 2026-11-29 09:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0704"
down_revision: str | None = "5a0c1e2b0703"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RECEIPTS = "parley_private.tool_call_receipts"
GONE = '{"done": true, "note": "This call was made earlier; its result is no longer stored."}'
"""The result a receipt gets back on downgrade when its row is gone (`receipts.GONE`)."""

STEPS = "public.agent_plan_steps s WHERE s.plan_id = m.plan_id"
PLAN_RESULTS = f"""coalesce((SELECT string_agg(concat_ws(E'\\n',
        'Step ' || s.step_number || ': ' || s.status, 'Result: ' || nullif(s.result, ''),
        'Problem: ' || nullif(s.error, '')), E'\\n' ORDER BY s.step_number)
    FROM {STEPS}), '')"""
"""A plan's results as the planner was given them (`shared.db.chats.PLAN_RESULTS`)."""
STORED_RESULTS = """m.role = 'tool' AND m.content = '' AND m.metadata->>'kind' = 'plan_results'"""
STEP_ARGUMENTS = """jsonb_strip_nulls(jsonb_build_object('step_number', s.step_number,
    'description', s.description,
    'assignee', CASE WHEN NOT s.executor_required THEN 'planner' END,
    'depends_on', CASE WHEN cardinality(s.depends_on) > 0 THEN to_jsonb(s.depends_on) END,
    'tools', CASE WHEN cardinality(s.tools) > 0 THEN to_jsonb(s.tools) END))"""
WITH_STEPS = f"""(SELECT jsonb_agg(CASE WHEN c->>'id' = m.metadata->>'plan_steps' THEN
        jsonb_set(c, '{{function,arguments}}', to_jsonb(((c->'function'->>'arguments')::jsonb
            || jsonb_build_object('steps', coalesce((
                SELECT jsonb_agg({STEP_ARGUMENTS} ORDER BY s.step_number) FROM {STEPS}),
                '[]'::jsonb)))::text))
        ELSE c END ORDER BY e.n)
    FROM jsonb_array_elements(m.tool_calls) WITH ORDINALITY AS e(c, n))"""
"""The accepted `create_plan` call with its steps again (`shared.db.chats.TOOL_CALLS`)."""

TIMELINE = """
CREATE OR REPLACE VIEW public.session_timeline WITH (security_invoker = true) AS
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id, {content} AS content, m.tool_name, m.model,
       m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id, m.created_at
  FROM public.chat_messages m
UNION ALL
SELECT d.session_id, d.seq, 'agent'::text, d.id,
       d.message_type, coalesce(a.role, 'system'), d.sender_agent_id,
       d.agent_session_id, d.plan_id, d.content, d.tool_name, d.model,
       NULL::integer, NULL::integer, NULL::numeric(14, 6), d.user_id, d.created_at
  FROM public.agent_chat_messages d
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
"""
"""`session_timeline` (as revision 5a0c1e2b0702 made it), the chat rows' `content` given."""

UPGRADE = f"""
{TIMELINE.format(content=f"CASE WHEN {STORED_RESULTS} THEN {PLAN_RESULTS} ELSE m.content END")}

ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT tool_call_receipts_result_when_completed,
    ADD CONSTRAINT tool_call_receipts_result_when_completed
        CHECK (result IS NULL OR completed_at IS NOT NULL);
COMMENT ON COLUMN {RECEIPTS}.result IS
    'The call''s result until the row answering the call is stored (then read from that row).';
"""

DOWNGRADE = f"""
UPDATE public.chat_messages m SET content = {PLAN_RESULTS} WHERE {STORED_RESULTS};
UPDATE public.chat_messages m SET tool_calls = {WITH_STEPS}, metadata = metadata - 'plan_steps'
 WHERE m.metadata ? 'plan_steps';
{TIMELINE.format(content="m.content")}

UPDATE {RECEIPTS} r SET result = coalesce(
    (SELECT m.content::jsonb FROM public.chat_messages m
      WHERE m.plan_id = r.plan_id AND m.tool_call_id = r.tool_call_id AND m.role = 'tool'
      LIMIT 1),
    (SELECT d.content::jsonb FROM public.agent_chat_messages d
      WHERE d.plan_id = r.plan_id AND d.tool_call_id = r.tool_call_id
        AND d.message_type = 'tool_result'
      LIMIT 1),
    '{GONE}'::jsonb)
 WHERE r.result IS NULL AND r.completed_at IS NOT NULL;
COMMENT ON COLUMN {RECEIPTS}.result IS NULL;
ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT tool_call_receipts_result_when_completed,
    ADD CONSTRAINT tool_call_receipts_result_when_completed
        CHECK ((result IS NULL) = (completed_at IS NULL));
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
