"""Views for SQL dashboards, and the per-session timeline of human and agent messages.

All views are `security_invoker`, so the caller's RLS applies (a plain view would run as its
owner and leak every user's rows). The operator views are granted to `service_role` only; the
timeline is also readable by `authenticated`, where RLS narrows it to the user's own sessions.
Days are UTC.

Revision ID: 0a1c0e5b0004
Revises: 0a1c0e5b0003
Create Date: 2026-11-22 17:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0a1c0e5b0004"
down_revision: str | None = "0a1c0e5b0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIEWS = (
    "execution_stats_daily",
    "plan_outcomes_daily",
    "permission_denials_daily",
    "session_timeline",
)

UPGRADE = """
CREATE VIEW public.execution_stats_daily WITH (security_invoker = true) AS
SELECT (coalesce(e.started_at, e.created_at) AT TIME ZONE 'UTC')::date AS day,
       e.model,
       e.agent_role,
       count(*) AS executions,
       count(*) FILTER (WHERE e.status = 'completed') AS completed,
       count(*) FILTER (WHERE e.status = 'failed') AS failed,
       count(*) FILTER (WHERE e.status = 'timeout') AS timed_out,
       count(*) FILTER (WHERE e.status = 'cancelled') AS cancelled,
       round(count(*) FILTER (WHERE e.status = 'completed')::numeric
             / nullif(count(*) FILTER (
                   WHERE e.status IN ('completed', 'failed', 'timeout', 'cancelled')), 0),
             4) AS success_rate,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY e.duration_ms)::numeric, 1)
           AS p50_duration_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY e.duration_ms)::numeric, 1)
           AS p95_duration_ms,
       sum(e.llm_calls) AS llm_calls,
       sum(e.prompt_tokens) AS prompt_tokens,
       sum(e.completion_tokens) AS completion_tokens,
       sum(e.cache_hit_tokens) AS cache_hit_tokens,
       sum(e.cost_usd) AS cost_usd,
       sum(e.tool_call_count) AS tool_calls,
       sum(e.permission_denials) AS permission_denials
  FROM public.agent_executions e
 GROUP BY 1, 2, 3;
COMMENT ON VIEW public.execution_stats_daily IS
    'Per UTC day x model x agent role: executions, outcome counts, success rate over finished '
    'runs, p50/p95 duration (ms), tokens (prompt, completion, cache hit), cost, tools, denials.';

CREATE VIEW public.plan_outcomes_daily WITH (security_invoker = true) AS
SELECT (p.created_at AT TIME ZONE 'UTC')::date AS day,
       coalesce(p.strategy, 'undecided') AS strategy,
       count(*) AS plans,
       count(*) FILTER (WHERE p.status = 'completed') AS completed,
       count(*) FILTER (WHERE p.status = 'failed') AS failed,
       count(*) FILTER (WHERE p.status = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE p.status = 'awaiting_approval') AS awaiting_approval,
       count(*) FILTER (WHERE p.status IN ('pending', 'executing')) AS in_progress,
       round(count(*) FILTER (WHERE p.status = 'completed')::numeric
             / nullif(count(*) FILTER (WHERE p.status IN ('completed', 'failed', 'cancelled')), 0),
             4) AS success_rate,
       round(avg(s.steps), 2) AS avg_steps,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY
           extract(epoch FROM p.completed_at - coalesce(p.started_at, p.created_at)) * 1000
       )::numeric, 1) AS p50_duration_ms,
       sum(p.prompt_tokens) AS prompt_tokens,
       sum(p.completion_tokens) AS completion_tokens,
       sum(p.cache_hit_tokens) AS cache_hit_tokens,
       sum(p.cost_usd) AS cost_usd
  FROM public.agent_plans p
  LEFT JOIN LATERAL (
      SELECT count(*) AS steps FROM public.agent_plan_steps st WHERE st.plan_id = p.id
  ) s ON true
 GROUP BY 1, 2;
COMMENT ON VIEW public.plan_outcomes_daily IS
    'Per UTC day x strategy: plan counts by outcome, success rate over finished plans, '
    'average steps, median duration (ms), tokens and cost.';

CREATE VIEW public.permission_denials_daily WITH (security_invoker = true) AS
SELECT (m.created_at AT TIME ZONE 'UTC')::date AS day,
       coalesce(m.tool_name, '(unknown)') AS tool_name,
       a.role AS agent_role,
       a.model,
       count(*) AS denials,
       count(DISTINCT m.sender_agent_id) AS agents,
       max(m.created_at) AS last_denied_at
  FROM public.agent_chat_messages m
  LEFT JOIN public.agents a ON a.id = m.sender_agent_id
 WHERE m.message_type = 'permission_denied'
 GROUP BY 1, 2, 3, 4;
COMMENT ON VIEW public.permission_denials_daily IS
    'Per UTC day x tool x agent role x model: permission denials recorded in the dialogue.';

CREATE VIEW public.session_timeline WITH (security_invoker = true) AS
SELECT m.session_id, m.seq, 'chat'::text AS source, m.id AS message_id,
       m.role AS kind, m.role AS sender_role, NULL::uuid AS agent_id,
       NULL::uuid AS agent_session_id, m.plan_id, m.content, m.tool_name, m.model,
       m.prompt_tokens, m.completion_tokens, m.cost_usd, m.user_id, m.created_at
  FROM public.chat_messages m
UNION ALL
SELECT d.session_id, d.seq, 'agent'::text, d.id,
       d.message_type, coalesce(a.role, 'system'), d.sender_agent_id,
       d.agent_session_id, t.plan_id, d.content, d.tool_name, d.model,
       d.prompt_tokens, d.completion_tokens, d.cost_usd, d.user_id, d.created_at
  FROM public.agent_chat_messages d
  JOIN public.agent_chat_sessions t ON t.id = d.agent_session_id
  LEFT JOIN public.agents a ON a.id = d.sender_agent_id;
COMMENT ON VIEW public.session_timeline IS
    'Human and agent messages of every session in one order (seq). Filter by session_id.';

REVOKE ALL ON public.execution_stats_daily, public.plan_outcomes_daily,
    public.permission_denials_daily, public.session_timeline FROM anon, authenticated;
GRANT SELECT ON public.execution_stats_daily, public.plan_outcomes_daily,
    public.permission_denials_daily, public.session_timeline TO service_role;
GRANT SELECT ON public.session_timeline TO authenticated;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP VIEW " + ", ".join(f"public.{v}" for v in reversed(VIEWS)))
