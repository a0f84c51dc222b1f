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

* **A step attempt's thread is its run.** Each step attempt had an `agent_chat_sessions` row
  (its thread) and an `agent_executions` row (its run), opened and closed together. The run now
  holds the thread: `turn_count`, `max_turns` and `thread_status` (NULL for a run without a
  thread: the planner's plan-level one), its id is the thread's (`agent_session_id` = `id`),
  and `agent_chat_sessions` is a view over those runs with the columns it had (`session_id`
  and `parent_agent_id` are the plan's; `child_agent_id` the run's agent; `error` the run's;
  `completed_at` the run's `finished_at` once the thread has ended), readable as before under
  RLS (`security_invoker`). Existing runs take their thread's id (nothing keeps a run's id;
  the dialogue keeps the thread's); a thread whose run retention had deleted becomes a run
  again (not counted on the dashboards: its run was, when it was written). A thread is now
  kept as long as its run (`RETENTION_EXECUTIONS_DAYS`).

Deployments upgrading keep their data: rows and receipts written before keep their copies
(readers take either). The runs taking their threads are rewritten in place (2.1 s at 100,000
turns on the benchmark's machine, the rollups' triggers held off: no count changes); to give
their old versions' space back to the operating system, run `VACUUM FULL` on
`agent_executions` at a quiet time (it locks the table while it copies it), or let later rows
reuse it. Downgrade writes the copies back: every receipt its result (from its
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

THREAD_COLUMNS = """(id, session_id, user_id, plan_id, step_id, parent_agent_id, child_agent_id,
    status, turn_count, max_turns, error, created_at, completed_at)"""
THREADS = """
    SELECT e.id, p.session_id, e.user_id, e.plan_id, e.step_id,
           p.planner_agent_id AS parent_agent_id, e.agent_id AS child_agent_id,
           e.thread_status AS status, e.turn_count, e.max_turns, e.error, e.created_at,
           CASE WHEN e.thread_status <> 'active' THEN e.finished_at END AS completed_at
      FROM public.agent_executions e JOIN public.agent_plans p ON p.id = e.plan_id
     WHERE e.thread_status IS NOT NULL"""
"""The threads as the runs hold them, in `agent_chat_sessions`' columns."""
ROLLUP_TRIGGERS = ("agent_executions_rolled_up", "agent_executions_rolled_up_again")

THREAD_IN_RUN = f"""
ALTER TABLE public.agent_executions
    ADD COLUMN turn_count integer CHECK (turn_count >= 0),
    ADD COLUMN max_turns integer CHECK (max_turns > 0),
    ADD COLUMN thread_status text CHECK (thread_status IN (
        'active', 'completed', 'failed', 'abandoned', 'timeout')),
    ADD CONSTRAINT agent_executions_thread CHECK (
        (thread_status IS NULL) = (max_turns IS NULL)
        AND (thread_status IS NULL) = (turn_count IS NULL));
COMMENT ON COLUMN public.agent_executions.thread_status IS
    'A step attempt''s thread (agent_chat_sessions: this run''s id): active until it ends; '
    'NULL for a run without a thread.';

-- The runs take their threads (as the rollups counted them: their triggers held off).
{"".join(f"ALTER TABLE public.agent_executions DISABLE TRIGGER {t};" for t in ROLLUP_TRIGGERS)}
UPDATE public.agent_executions e
   SET id = t.id, agent_session_id = t.id, turn_count = t.turn_count,
       max_turns = t.max_turns, thread_status = t.status, error = coalesce(e.error, t.error)
  FROM (SELECT DISTINCT ON (agent_session_id) id, agent_session_id
          FROM public.agent_executions WHERE agent_session_id IS NOT NULL
         ORDER BY agent_session_id, created_at, id) first
  JOIN public.agent_chat_sessions t ON t.id = first.agent_session_id
 WHERE e.id = first.id;
UPDATE public.agent_executions SET agent_session_id = NULL
 WHERE agent_session_id IS DISTINCT FROM id AND agent_session_id IS NOT NULL;
INSERT INTO public.agent_executions (id, user_id, plan_id, step_id, agent_id,
    agent_session_id, agent_role, model, attempt, status, started_at, finished_at, error,
    created_at, turn_count, max_turns, thread_status)
SELECT t.id, t.user_id, t.plan_id, t.step_id, t.child_agent_id, t.id,
       CASE WHEN a.role = 'planner' THEN 'planner' ELSE 'executor' END,
       coalesce(a.model, 'unknown'),
       coalesce((SELECT max(x.attempt) FROM public.agent_executions x
                  WHERE x.plan_id = t.plan_id AND x.step_id IS NOT DISTINCT FROM t.step_id), 0)
           + row_number() OVER (PARTITION BY t.plan_id, t.step_id ORDER BY t.created_at, t.id),
       CASE t.status WHEN 'active' THEN 'running' WHEN 'abandoned' THEN 'cancelled'
                     ELSE t.status END,
       t.created_at, greatest(t.completed_at, t.created_at), t.error, t.created_at,
       t.turn_count, t.max_turns, t.status
  FROM public.agent_chat_sessions t LEFT JOIN public.agents a ON a.id = t.child_agent_id
 WHERE NOT EXISTS (SELECT 1 FROM public.agent_executions e WHERE e.id = t.id);
{"".join(f"ALTER TABLE public.agent_executions ENABLE TRIGGER {t};" for t in ROLLUP_TRIGGERS)}

DROP TABLE public.agent_chat_sessions;
CREATE VIEW public.agent_chat_sessions WITH (security_invoker = true) AS {THREADS};
COMMENT ON VIEW public.agent_chat_sessions IS
    'One planner-agent thread per step attempt: the thread its run (agent_executions) holds.';
REVOKE ALL ON public.agent_chat_sessions FROM PUBLIC, anon, authenticated, service_role;
GRANT SELECT ON public.agent_chat_sessions TO authenticated, service_role;
"""

THREAD_TABLE = f"""
DROP VIEW public.agent_chat_sessions;
CREATE TABLE public.agent_chat_sessions (
    id uuid PRIMARY KEY DEFAULT parley_private.new_id(),
    session_id uuid NOT NULL,
    user_id uuid NOT NULL,
    plan_id uuid NOT NULL REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    step_id uuid,
    parent_agent_id uuid NOT NULL,
    child_agent_id uuid NOT NULL,
    status text NOT NULL DEFAULT 'active' CHECK (status IN (
        'active', 'completed', 'failed', 'abandoned', 'timeout')),
    turn_count integer NOT NULL DEFAULT 0 CHECK (turn_count >= 0),
    max_turns integer NOT NULL CHECK (max_turns > 0),
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
CREATE INDEX agent_chat_sessions_plan_idx ON public.agent_chat_sessions (plan_id);
INSERT INTO public.agent_chat_sessions {THREAD_COLUMNS} {THREADS};
ALTER TABLE public.agent_chat_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY agent_chat_sessions_select ON public.agent_chat_sessions FOR SELECT
    TO authenticated USING (user_id = (SELECT auth.uid()));
REVOKE ALL ON public.agent_chat_sessions FROM anon, authenticated;
GRANT SELECT ON public.agent_chat_sessions TO authenticated;
GRANT ALL ON public.agent_chat_sessions TO service_role;
ALTER TABLE public.agent_executions DROP CONSTRAINT agent_executions_thread,
    DROP COLUMN thread_status, DROP COLUMN max_turns, DROP COLUMN turn_count;
"""

UPGRADE = f"""
{THREAD_IN_RUN}
{TIMELINE.format(content=f"CASE WHEN {STORED_RESULTS} THEN {PLAN_RESULTS} ELSE m.content END")}

ALTER TABLE {RECEIPTS}
    DROP CONSTRAINT tool_call_receipts_result_when_completed,
    ADD CONSTRAINT tool_call_receipts_result_when_completed
        CHECK (result IS NULL OR completed_at IS NOT NULL);
COMMENT ON COLUMN {RECEIPTS}.result IS
    'The call''s result until the row answering the call is stored (then read from that row).';
"""

DOWNGRADE = f"""
{THREAD_TABLE}
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
