-- Parley dashboards: ready queries over the views (migrations/versions/*_dashboard_views.py).
-- Run them as an operator (the Supabase SQL editor, psql as postgres, or service_role).
-- All days are UTC. execution_stats_daily and plan_outcomes_daily read the daily rollups
-- (*_daily_rollups.py; docs/observability.md): constant time, history kept after retention,
-- p50/p95 within 1/32 of exact.

-- 1. Cost and tokens per model and role, last 30 days.
SELECT day, model, agent_role, executions, cost_usd,
       prompt_tokens, completion_tokens, cache_hit_tokens,
       round(100.0 * cache_hit_tokens / nullif(prompt_tokens, 0), 1) AS cache_hit_pct
  FROM execution_stats_daily
 WHERE day >= current_date - 30
 ORDER BY day DESC, cost_usd DESC;

-- 2. Reliability and latency: success rate and p50/p95 duration per model, last 7 days.
SELECT model, agent_role,
       sum(executions) AS executions,
       round(sum(completed)::numeric / nullif(sum(completed + failed + timed_out + cancelled), 0), 4)
           AS success_rate,
       max(p50_duration_ms) AS worst_daily_p50_ms,
       max(p95_duration_ms) AS worst_daily_p95_ms
  FROM execution_stats_daily
 WHERE day >= current_date - 7
 GROUP BY model, agent_role
 ORDER BY executions DESC;

-- 3. p50/p95 over a whole window (the daily view's percentiles do not add up across days),
--    from the rollups' duration histogram: constant time, the nearest rank within 1/32.
SELECT model, agent_role, max(total) AS runs,
       parley_private.duration_bucket_value(min(duration_bucket)
           FILTER (WHERE upto > 0.5 * (total - 1))) AS p50_ms,
       parley_private.duration_bucket_value(min(duration_bucket)
           FILTER (WHERE upto > 0.95 * (total - 1))) AS p95_ms
  FROM (SELECT model, agent_role, duration_bucket,
               sum(sum(executions)) OVER (PARTITION BY model, agent_role
                                          ORDER BY duration_bucket) AS upto,
               sum(sum(executions)) OVER (PARTITION BY model, agent_role) AS total
          FROM parley_private.execution_rollup
         WHERE day >= current_date - 7 AND duration_bucket >= 0
         GROUP BY model, agent_role, duration_bucket) h
 GROUP BY model, agent_role;

-- 3b. The same, exact, from the detail rows (what retention kept; time grows with the window).
SELECT model, agent_role,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95_ms
  FROM agent_executions
 WHERE started_at >= now() - interval '7 days' AND duration_ms IS NOT NULL
 GROUP BY model, agent_role;

-- 4. Plan outcomes by strategy, last 30 days.
SELECT strategy, sum(plans) AS plans, sum(completed) AS completed, sum(failed) AS failed,
       sum(cancelled) AS cancelled, sum(awaiting_approval) AS awaiting_approval,
       round(sum(completed)::numeric / nullif(sum(completed + failed + cancelled), 0), 4)
           AS success_rate,
       sum(cost_usd) AS cost_usd
  FROM plan_outcomes_daily
 WHERE day >= current_date - 30
 GROUP BY strategy
 ORDER BY plans DESC;

-- 5. Which tools executors try and are refused (a prompt or plan problem when it climbs).
SELECT tool_name, agent_role, model, sum(denials) AS denials, max(last_denied_at) AS last_seen
  FROM permission_denials_daily
 WHERE day >= current_date - 30
 GROUP BY tool_name, agent_role, model
 ORDER BY denials DESC;

-- 6. Permission-denial rate per model: denials per executor run.
SELECT model, sum(permission_denials) AS denials, sum(executions) AS executions,
       round(sum(permission_denials)::numeric / nullif(sum(executions), 0), 3) AS per_run
  FROM execution_stats_daily
 WHERE agent_role = 'executor' AND day >= current_date - 30
 GROUP BY model;

-- 7. One session, human and agent messages interleaved (replace the id).
SELECT seq, source, kind, sender_role, left(content, 120) AS content, model, cost_usd, created_at
  FROM session_timeline
 WHERE session_id = '00000000-0000-0000-0000-000000000000'
 ORDER BY seq;

-- 8. The most expensive sessions this week.
SELECT id, user_id, title, cost_usd, prompt_tokens + completion_tokens AS tokens, last_message_at
  FROM chat_sessions
 WHERE last_message_at >= now() - interval '7 days'
 ORDER BY cost_usd DESC
 LIMIT 20;

-- 9. Failed plans of the last day, each with its trace (docs/observability.md): the turn's, and
--    any other an execution of it ran in (a resume after an approval, the sweeper's re-drive).
--    NULL: tracing was off. Open the id in the tracing backend; the logs: filter plan_id.
SELECT p.id, p.created_at, p.error, p.trace_id,
       array_agg(DISTINCT e.trace_id) FILTER (WHERE e.trace_id <> p.trace_id) AS other_traces
  FROM agent_plans p LEFT JOIN agent_executions e ON e.plan_id = p.id
 WHERE p.status = 'failed' AND p.created_at >= now() - interval '1 day'
 GROUP BY p.id
 ORDER BY p.created_at DESC;
