"""Repository: agent executions (one row per agent run, with its accounting)."""

from __future__ import annotations

from uuid import UUID

from shared.db._rows import fetch_one, fetch_optional
from shared.db.database import Connection
from shared.db.records import AgentRole, Execution, ExecutionStatus, columns
from shared.kernel.usage import Usage

EXECUTION = columns(Execution)


async def start_execution(
    conn: Connection,
    *,
    user_id: UUID,
    plan_id: UUID,
    agent_id: UUID,
    agent_role: AgentRole,
    model: str,
    step_id: UUID | None = None,
    agent_session_id: UUID | None = None,
    attempt: int = 1,
) -> tuple[Execution, bool]:
    """Record a run as `running`: (execution, True if new). Idempotent on (plan, step,
    attempt): a plan-level run has no step."""
    created = await fetch_optional(
        conn,
        Execution,
        f"""INSERT INTO agent_executions
              (user_id, plan_id, step_id, agent_id, agent_session_id, agent_role, model,
               attempt, status, started_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'running', now())
            ON CONFLICT ON CONSTRAINT agent_executions_attempt DO NOTHING
            RETURNING {EXECUTION}""",
        (user_id, plan_id, step_id, agent_id, agent_session_id, agent_role, model, attempt),
    )
    if created is not None:
        return created, True
    existing = await fetch_one(
        conn,
        Execution,
        f"""SELECT {EXECUTION} FROM agent_executions
            WHERE plan_id = %s AND step_id IS NOT DISTINCT FROM %s AND attempt = %s""",
        (plan_id, step_id, attempt),
    )
    return existing, False


async def add_execution_usage(
    conn: Connection,
    *,
    execution_id: UUID,
    usage: Usage,
    llm_calls: int = 0,
    tool_calls: int = 0,
    permission_denials: int = 0,
) -> None:
    """Add one call's tokens, cost and counters to the execution (kept current as it runs)."""
    await conn.execute(
        """UPDATE agent_executions SET
               llm_calls = llm_calls + %s, prompt_tokens = prompt_tokens + %s,
               completion_tokens = completion_tokens + %s,
               cache_hit_tokens = cache_hit_tokens + %s, cost_usd = cost_usd + %s,
               tool_call_count = tool_call_count + %s,
               permission_denials = permission_denials + %s
           WHERE id = %s""",
        (
            llm_calls,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cache_hit_tokens,
            usage.cost_usd,
            tool_calls,
            permission_denials,
            execution_id,
        ),
    )


async def finish_execution(
    conn: Connection, *, execution_id: UUID, status: ExecutionStatus, error: str | None = None
) -> Execution:
    """Close a run with its final status (and error); stamps `finished_at`."""
    return await fetch_one(
        conn,
        Execution,
        f"""UPDATE agent_executions SET status = %s, error = %s, finished_at = now()
            WHERE id = %s RETURNING {EXECUTION}""",
        (status, error, execution_id),
    )


async def get_execution(conn: Connection, *, execution_id: UUID) -> Execution | None:
    """One execution by id."""
    return await fetch_optional(
        conn, Execution, f"SELECT {EXECUTION} FROM agent_executions WHERE id = %s", (execution_id,)
    )


async def close_open_executions(
    conn: Connection,
    *,
    plan_id: UUID,
    status: ExecutionStatus,
    error: str | None = None,
    step_id: UUID | None = None,
) -> None:
    """Finish every run of the plan (or of one of its steps) still `pending`/`running`
    (cancellation or failure)."""
    await conn.execute(
        """UPDATE agent_executions SET status = %s, error = coalesce(error, %s),
                  finished_at = now()
           WHERE plan_id = %s AND status IN ('pending', 'running')
             AND (%s::uuid IS NULL OR step_id = %s)""",
        (status, error, plan_id, step_id, step_id),
    )
