"""The SQL a `Transition`'s statement is built from: one CTE per kind of change (the session's
block of numbers, the plan, the rows appended, a model call's accounting, a step, an agent,
new rows, approvals cancelled, receipts named, a stream's load, the events sent), and the
pieces the runs' other statements share with it.
"""

from __future__ import annotations

from typing import Any

from shared.db.plans import ENDED_STEP, SETTLED_STEP, TERMINAL_PLAN
from shared.events.emitter import SEND
from shared.events.pacing import LOAD_SQL, LoadQuery

NO_EXECUTION: dict[str, Any] = {
    "execution": None,
    "llm_calls": 0,
    "tool_calls": 0,
    "denials": 0,
    "close": None,
    "error": None,
    "close_open": False,
}


"""The execution parameters of a statement that accounts to no execution (shared: copy it to
change it)."""


TOTALS = """jsonb_build_object(
    'prompt_tokens', plan_row.prompt_tokens, 'completion_tokens', plan_row.completion_tokens,
    'cache_hit_tokens', plan_row.cache_hit_tokens, 'cost_usd', plan_row.cost_usd::text)"""


"""A plan's totals as events carry them (`Usage.json`)."""


SESSION_BLOCK = """sess AS (
    UPDATE chat_sessions SET last_seq = last_seq + %(numbers)s, last_message_at = now(),
        prompt_tokens = prompt_tokens + %(p)s, completion_tokens = completion_tokens + %(c)s,
        cache_hit_tokens = cache_hit_tokens + %(h)s, cost_usd = cost_usd + %(cost)s
    WHERE id = %(session)s
    RETURNING last_seq - %(numbers)s AS base)"""


PLAN_UPDATE = f"""plan_row AS (
    UPDATE agent_plans SET
        prompt_tokens = prompt_tokens + %(p)s, completion_tokens = completion_tokens + %(c)s,
        cache_hit_tokens = cache_hit_tokens + %(h)s, cost_usd = cost_usd + %(cost)s,
        status = coalesce(%(status)s, status),
        strategy = coalesce(%(strategy)s, strategy),
        goal = coalesce(%(goal)s, goal),
        error = coalesce(%(error)s, error),
        started_at = CASE WHEN %(status)s = 'executing' THEN coalesce(started_at, now())
                          ELSE started_at END,
        completed_at = CASE WHEN %(status)s IN {TERMINAL_PLAN} THEN now() ELSE completed_at END,
        lease_owner = CASE WHEN %(release)s THEN NULL ELSE lease_owner END,
        lease_expires_at = CASE WHEN %(release)s THEN NULL ELSE lease_expires_at END
    WHERE id = %(plan)s AND EXISTS (SELECT 1 FROM sess)  -- the session's row is locked first
    RETURNING *)"""


CHAT_ROWS = """chat_rows AS (
    INSERT INTO chat_messages (id, session_id, user_id, seq, role, content, plan_id, model,
        prompt_tokens, completion_tokens, cache_hit_tokens, cost_usd, tool_calls, tool_call_id,
        tool_name, metadata, reasoning_content)
    SELECT r.id, %(session)s, %(user)s, sess.base + r.slot, r.role, r.content, %(plan)s,
        r.model, r.prompt_tokens, r.completion_tokens, r.cache_hit_tokens, r.cost_usd,
        r.tool_calls, r.tool_call_id, r.tool_name, r.metadata, r.reasoning_content
    FROM sess, jsonb_to_recordset(%(chat)s) AS r(id uuid, slot int, role text, content text,
        model text, prompt_tokens int, completion_tokens int, cache_hit_tokens int,
        cost_usd numeric, tool_calls jsonb, tool_call_id text, tool_name text, metadata jsonb,
        reasoning_content text)
    RETURNING *)"""


DIALOGUE_ROWS = """dialogue_rows AS (
    INSERT INTO agent_chat_messages (id, agent_session_id, plan_id, session_id, user_id, seq,
        sender_agent_id, receiver_agent_id, message_type, content, tool_name, tool_call_id,
        tool_args, model, reasoning_content)
    SELECT r.id, r.agent_session_id, %(plan)s, %(session)s, %(user)s, sess.base + r.slot,
        r.sender_agent_id, r.receiver_agent_id, r.message_type, r.content, r.tool_name,
        r.tool_call_id, r.tool_args, r.model, r.reasoning_content
    FROM sess, jsonb_to_recordset(%(dialogue)s) AS r(id uuid, slot int, agent_session_id uuid,
        sender_agent_id uuid, receiver_agent_id uuid, message_type text, content text,
        tool_name text, tool_call_id text, tool_args jsonb, model text, reasoning_content text)
    RETURNING *)"""


ANSWERED_ROWS = """answered_rows AS (
    UPDATE agent_chat_messages d
    SET message_type = 'tool_result', content = a.content, seq = sess.base + a.slot
    FROM sess, jsonb_to_recordset(%(answers)s) AS a(id uuid, slot int, content text)
    WHERE d.id = a.id AND d.plan_id = %(plan)s
      AND d.tool_args IS NOT NULL AND d.sender_agent_id IS NOT NULL
      AND (d.message_type = 'tool_call' AND d.content = '' OR d.message_type = 'tool_result')
    RETURNING d.*)"""


"""Tool calls answered in their own rows: the `tool_call` row (a call without text of its own)
becomes a `tool_result` row, with the result's number, that still says who called what with
which arguments (`Transition.answer_call`). Answering it again (a second run of the attempt)
replaces the result."""


EXECUTIONS = """executions_row AS (
    UPDATE agent_executions SET
        llm_calls = llm_calls + CASE WHEN id = %(execution)s THEN %(llm_calls)s ELSE 0 END,
        prompt_tokens = prompt_tokens + CASE WHEN id = %(execution)s THEN %(p)s ELSE 0 END,
        completion_tokens = completion_tokens
            + CASE WHEN id = %(execution)s THEN %(c)s ELSE 0 END,
        cache_hit_tokens = cache_hit_tokens
            + CASE WHEN id = %(execution)s THEN %(h)s ELSE 0 END,
        cost_usd = cost_usd + CASE WHEN id = %(execution)s THEN %(cost)s ELSE 0 END,
        tool_call_count = tool_call_count
            + CASE WHEN id = %(execution)s THEN %(tool_calls)s ELSE 0 END,
        permission_denials = permission_denials
            + CASE WHEN id = %(execution)s THEN %(denials)s ELSE 0 END,
        status = coalesce(%(close)s, status),
        error = CASE WHEN %(close)s IS NOT NULL THEN coalesce(error, %(error)s)
                     WHEN id = %(thread)s::uuid AND %(thread_status)s::text IS NOT NULL
                         THEN coalesce(error, %(thread_error)s::text)
                     ELSE error END,
        finished_at = CASE WHEN %(close)s IS NULL THEN finished_at ELSE now() END,
        turn_count = turn_count + CASE WHEN id = %(thread)s::uuid THEN %(turns)s::int ELSE 0 END,
        thread_status = CASE WHEN id = %(thread)s::uuid
                             THEN coalesce(%(thread_status)s::text, thread_status)
                             ELSE thread_status END
    WHERE id = %(execution)s OR id = %(thread)s::uuid
       OR (%(close_open)s AND plan_id = %(plan)s AND status IN ('pending', 'running'))
    RETURNING *)"""


"""The runs' accounting and, on a step attempt's run, its thread (one update of the row)."""


STEP_UPDATE = f"""step_row AS (
    UPDATE agent_plan_steps SET
        status = %(step_status)s,
        result = coalesce(%(step_result)s, result),
        error = coalesce(%(step_error)s, error),
        assigned_agent_id = coalesce(%(step_agent)s, assigned_agent_id),
        started_at = CASE WHEN %(step_status)s = 'running' THEN coalesce(started_at, now())
                          ELSE started_at END,
        completed_at = CASE WHEN %(step_status)s IN {ENDED_STEP} THEN now()
                            ELSE completed_at END,
        lease_owner = CASE WHEN %(step_status)s IN {SETTLED_STEP} THEN NULL
                           ELSE lease_owner END,
        lease_expires_at = CASE WHEN %(step_status)s IN {SETTLED_STEP} THEN NULL
                                ELSE lease_expires_at END
    WHERE id = %(step)s
    RETURNING *)"""


AGENT_STATUS = """agent_status_row AS (
    UPDATE agents SET status = %(agent_status)s,
        completed_at = CASE WHEN %(agent_status)s IN ('completed', 'failed') THEN now() END
    WHERE id = %(agent_status_id)s
    RETURNING id)"""


STEP_ROWS = """step_rows AS (
    INSERT INTO agent_plan_steps (id, plan_id, user_id, step_number, description,
                                  executor_required, depends_on, tools)
    SELECT s.id, %(plan)s, %(user)s, s.step_number, s.description, s.executor_required,
           s.depends_on, s.tools
    FROM jsonb_to_recordset(%(steps)s) AS s(id uuid, step_number int, description text,
         executor_required bool, depends_on int[], tools text[])
    RETURNING *)"""


NEW_ROWS = {
    "agent": """new_agent AS (
        INSERT INTO agents (id, user_id, chat_session_id, role, name, model, permissions,
                            token_budget, allowed_tools, parent_agent_id, prompt_id)
        VALUES (%(new_agent)s, %(user)s, %(agent_session)s, 'executor', %(agent_name)s,
                %(agent_model)s, 'read_only', %(agent_budget)s, %(agent_tools)s,
                %(agent_parent)s, %(prompt_id)s)
        RETURNING *)""",
    "execution": """new_execution AS (
        INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
            agent_session_id, agent_role, model, attempt, status, started_at, trace_id,
            turn_count, max_turns, thread_status, delegation_seq, delegation_rest)
        VALUES (%(new_execution)s, %(user)s, %(plan)s, %(execution_step)s,
                %(execution_agent)s, %(new_execution)s, %(execution_role)s,
                %(execution_model)s, %(execution_attempt)s, 'running', now(),
                %(execution_trace)s, 0, %(execution_max_turns)s, 'active',
                (SELECT base FROM sess) + %(delegation_slot)s::int, %(delegation_rest)s)
        RETURNING *)""",
}


"""The rows a step attempt opens with (`new_agent` only for an executor's step): its run holds
its thread and its delegation (`db.delegations`)."""


def thread_json(run: str, plan: str) -> str:
    """The thread (`agent_chat_sessions`' columns, as JSON) that the run row `run` of the plan
    row `plan` holds — for rows this statement wrote, which the view does not see yet."""
    return f"""jsonb_build_object('id', {run}.id, 'session_id', {plan}.session_id,
        'user_id', {run}.user_id, 'plan_id', {run}.plan_id, 'step_id', {run}.step_id,
        'parent_agent_id', {plan}.planner_agent_id, 'child_agent_id', {run}.agent_id,
        'status', {run}.thread_status, 'turn_count', {run}.turn_count,
        'max_turns', {run}.max_turns, 'error', {run}.error, 'created_at', {run}.created_at,
        'completed_at', CASE WHEN {run}.thread_status <> 'active' THEN {run}.finished_at END)"""


APPROVALS_CANCELLED = """approvals_cancelled AS (
    UPDATE agent_approvals SET status = 'cancelled', decided_at = now()
    WHERE plan_id = %(plan)s AND status = 'pending'
    RETURNING id)"""


RECEIPTS_NAMED = """receipts_named AS (
    UPDATE parley_private.tool_call_receipts r SET result = NULL
    FROM jsonb_each(%(stored_results)s) AS stored(call_id, payload)
    WHERE r.plan_id = %(plan)s AND r.tool_call_id = stored.call_id
      AND r.result = stored.payload
    RETURNING r.tool_call_id)"""


"""Write receipts whose result the statement's rows hold now: the copy goes (`db.receipts`
reads it from the row)."""


STREAM_ENDED = """stream_ended AS (
    UPDATE parley_private.realtime_streams SET ended_at = now(), expires_at = now()
    WHERE plan_id = %(plan)s AND ended_at IS NULL
    RETURNING plan_id)"""


STREAM_LOAD = f"stream_load AS (SELECT {LOAD_SQL} AS load)"


SENT = f"""sent AS (
    SELECT {SEND}, (SELECT base FROM sess), (SELECT {TOTALS} FROM plan_row)) AS seqs)"""


def planner_execution(plans: str, *, when: str = "true") -> str:
    """The CTEs `new_execution` and `execution`: the planner's plan-level execution of the
    plan the CTE `plans` holds (made on first use, in the plan's trace), when the SQL condition
    `when` holds."""
    return f"""new_execution AS (
    INSERT INTO agent_executions (user_id, plan_id, agent_id, agent_role, model, attempt,
                                  status, started_at, trace_id)
    SELECT p.user_id, p.id, a.id, 'planner', a.model, 1, 'running', now(), p.trace_id
    FROM {plans} p JOIN agents a ON a.id = p.planner_agent_id
    WHERE {when}
    ON CONFLICT ON CONSTRAINT agent_executions_attempt DO NOTHING
    RETURNING *),
execution AS (
    SELECT * FROM new_execution
    UNION ALL
    SELECT e.* FROM agent_executions e, {plans} p
    WHERE {when} AND e.plan_id = p.id AND e.attempt = 1 AND e.step_id IS NULL
      AND e.agent_role = 'planner'
      AND NOT EXISTS (SELECT 1 FROM new_execution))"""


def load_params(load: LoadQuery | None) -> dict[str, Any]:
    """`LOAD_SQL`'s parameters, all null when no stream is registered (the CTE reads none)."""
    if load is not None:
        return load.params()
    keys = ("load_plan", "load_seconds", "load_window", "load_private", "load_cap")
    return dict.fromkeys(keys)
