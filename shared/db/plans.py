"""Repository: plans (one per user message) and their steps."""

from collections.abc import Sequence
from typing import NamedTuple
from uuid import UUID

from psycopg.types.json import Jsonb

from shared.db._rows import (
    fetch_all,
    fetch_one,
    fetch_optional,
    record_from_json,
    records_from_json,
)
from shared.db.database import Connection
from shared.db.leases import PARKED
from shared.db.records import Plan, PlanStatus, PlanStep, PlanStrategy, StepStatus, columns
from shared.kernel.usage import Usage

PLAN = columns(Plan)
STEP = columns(PlanStep)
TERMINAL_PLAN: tuple[PlanStatus, ...] = ("completed", "failed", "cancelled")
"""The statuses a plan never leaves."""
ENDED_STEP = ("completed", "failed", "skipped", "cancelled")
"""The statuses a step never leaves."""
SETTLED_STEP = ("awaiting_approval", *ENDED_STEP)
"""The statuses in which no run works on a step (or plan): it gives its lease back."""
_LEASE_ENDS = f"""lease_owner = CASE WHEN %(status)s IN {SETTLED_STEP}
                               THEN NULL ELSE lease_owner END,
                lease_expires_at = CASE WHEN %(status)s IN {SETTLED_STEP}
                                    THEN NULL ELSE lease_expires_at END"""
"""A run that settles its plan or step (waits, ends) gives the lease back in the same write."""
RUNNING_PLAN = """cancel_requested_at IS NULL AND (
        (status IN ('pending', 'executing') AND lease_expires_at > now())
        OR (status = 'pending' AND lease_owner IS NULL
            AND created_at > now() - make_interval(secs => %(fresh)s))
        OR status = 'awaiting_approval')"""
"""SQL: an `agent_plans` row is still running (its turn holds up the session's next one).

Running means, for a plan nobody asked to cancel: someone holds its lease; or it is
`pending`, unleased and younger than `%(fresh)s` seconds (its first run has not started yet);
or it waits for the user. A plan whose runner died (lease expired) is not running: it stays
resumable, and does not hold up the session."""


class NewStep(NamedTuple):
    """A step as the planner wrote it, before it is stored."""

    step_number: int
    description: str
    executor_required: bool
    depends_on: Sequence[int] = ()
    tools: Sequence[str] = ()


async def create_plan(
    conn: Connection,
    *,
    session_id: UUID,
    user_id: UUID,
    user_message_id: UUID,
    planner_agent_id: UUID,
    strategy: PlanStrategy | None = None,
    goal: str | None = None,
) -> tuple[Plan, bool]:
    """The plan for one user message: (plan, True if created now). One plan per message, ever."""
    created = await fetch_optional(
        conn,
        Plan,
        f"""INSERT INTO agent_plans (session_id, user_id, user_message_id, planner_agent_id,
                                     strategy, goal)
            VALUES (%s, %s, %s, %s, %s, %s)
            ON CONFLICT (user_message_id) DO NOTHING RETURNING {PLAN}""",
        (session_id, user_id, user_message_id, planner_agent_id, strategy, goal),
    )
    if created is not None:
        return created, True
    existing = await fetch_one(
        conn, Plan, f"SELECT {PLAN} FROM agent_plans WHERE user_message_id = %s", (user_message_id,)
    )
    return existing, False


async def get_plan(conn: Connection, *, plan_id: UUID, lock: bool = False) -> Plan | None:
    """The plan, or None if it does not exist (a user's lookup is `get_user_plan`); `lock`
    holds its row until the transaction ends."""
    query = f"SELECT {PLAN} FROM agent_plans WHERE id = %(id)s"
    return await fetch_optional(
        conn, Plan, query + " FOR UPDATE" if lock else query, {"id": plan_id}
    )


async def get_user_plan(
    conn: Connection, *, plan_id: UUID, user_id: UUID | None = None, lock: bool = False
) -> Plan | None:
    """The plan as its user sees it: None if it does not exist, is not `user_id`'s (when
    given; under the user's RLS, omit it), or its session was deleted — every route of a
    deleted session answers 404. `lock` holds the plan's row until the transaction ends."""
    query = f"""SELECT {PLAN} FROM agent_plans p
                WHERE id = %(id)s AND (%(user)s::uuid IS NULL OR user_id = %(user)s)
                  AND EXISTS (SELECT 1 FROM chat_sessions s
                              WHERE s.id = p.session_id AND s.status <> 'deleted')"""
    return await fetch_optional(
        conn, Plan, query + " FOR UPDATE OF p" if lock else query, {"id": plan_id, "user": user_id}
    )


async def list_open_plans(conn: Connection, *, session_id: UUID) -> list[Plan]:
    """The session's plans that have not ended, their rows locked until the transaction ends."""
    return await fetch_all(
        conn,
        Plan,
        f"""SELECT {PLAN} FROM agent_plans
            WHERE session_id = %s AND status NOT IN {TERMINAL_PLAN}
            ORDER BY created_at FOR UPDATE""",
        (session_id,),
    )


async def update_plan(
    conn: Connection,
    *,
    plan_id: UUID,
    status: PlanStatus | None = None,
    strategy: PlanStrategy | None = None,
    goal: str | None = None,
    error: str | None = None,
) -> Plan:
    """Change a plan's status/strategy/goal/error; timestamps follow the status."""
    return await fetch_one(
        conn,
        Plan,
        f"""UPDATE agent_plans SET
                status = coalesce(%(status)s, status),
                strategy = coalesce(%(strategy)s, strategy),
                goal = coalesce(%(goal)s, goal),
                error = coalesce(%(error)s, error),
                started_at = CASE WHEN %(status)s = 'executing'
                                  THEN coalesce(started_at, now()) ELSE started_at END,
                completed_at = CASE WHEN %(status)s IN {TERMINAL_PLAN}
                                    THEN now() ELSE completed_at END,
                {_LEASE_ENDS}
            WHERE id = %(id)s RETURNING {PLAN}""",
        {"status": status, "strategy": strategy, "goal": goal, "error": error, "id": plan_id},
    )


async def settle_awaiting(conn: Connection, *, plan_id: UUID, decisions_seen: int) -> Plan | None:
    """Put the plan in `awaiting_approval` (giving its lease back) — unless an approval was
    decided since its run counted `decisions_seen`, or a cancel was asked for: then None, and
    the run goes on (to use the decision, or to stop)."""
    return await fetch_optional(
        conn,
        Plan,
        f"""UPDATE agent_plans SET status = 'awaiting_approval', decisions_seen = decisions,
                   lease_owner = NULL, lease_expires_at = NULL
            WHERE id = %s AND decisions = %s AND cancel_requested_at IS NULL
            RETURNING {PLAN}""",
        (plan_id, decisions_seen),
    )


async def add_plan_usage(conn: Connection, *, plan_id: UUID, usage: Usage) -> None:
    """Add one call's tokens and cost to the plan's totals."""
    await conn.execute(
        """UPDATE agent_plans
           SET prompt_tokens = prompt_tokens + %s, completion_tokens = completion_tokens + %s,
               cache_hit_tokens = cache_hit_tokens + %s, cost_usd = cost_usd + %s
           WHERE id = %s""",
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cache_hit_tokens,
            usage.cost_usd,
            plan_id,
        ),
    )


async def add_steps(
    conn: Connection, *, plan_id: UUID, user_id: UUID, steps: Sequence[NewStep]
) -> list[PlanStep]:
    """Store a plan's steps (already validated) in one statement."""
    if not steps:
        return []
    rows = [
        {
            "step_number": s.step_number,
            "description": s.description,
            "executor_required": s.executor_required,
            "depends_on": list(s.depends_on),
            "tools": list(s.tools),
        }
        for s in steps
    ]
    return await fetch_all(
        conn,
        PlanStep,
        f"""INSERT INTO agent_plan_steps
              (plan_id, user_id, step_number, description, executor_required, depends_on, tools)
            SELECT %s, %s, s.step_number, s.description, s.executor_required, s.depends_on,
                   s.tools
              FROM jsonb_to_recordset(%s) AS s(step_number int, description text,
                   executor_required bool, depends_on int[], tools text[])
            ORDER BY s.step_number
            RETURNING {STEP}""",
        (plan_id, user_id, Jsonb(rows)),
    )


async def list_steps(conn: Connection, *, plan_id: UUID) -> list[PlanStep]:
    """A plan's steps in order."""
    return await fetch_all(
        conn,
        PlanStep,
        f"SELECT {STEP} FROM agent_plan_steps WHERE plan_id = %s ORDER BY step_number",
        (plan_id,),
    )


async def update_step(
    conn: Connection,
    *,
    step_id: UUID,
    status: StepStatus,
    result: str | None = None,
    error: str | None = None,
    assigned_agent_id: UUID | None = None,
) -> PlanStep:
    """Move a step to `status` with its result or error; timestamps follow the status."""
    return await fetch_one(
        conn,
        PlanStep,
        f"""UPDATE agent_plan_steps SET
                status = %(status)s,
                result = coalesce(%(result)s, result),
                error = coalesce(%(error)s, error),
                assigned_agent_id = coalesce(%(agent)s, assigned_agent_id),
                started_at = CASE WHEN %(status)s = 'running'
                                  THEN coalesce(started_at, now()) ELSE started_at END,
                completed_at = CASE WHEN %(status)s IN {ENDED_STEP}
                                    THEN now() ELSE completed_at END,
                {_LEASE_ENDS}
            WHERE id = %(id)s RETURNING {STEP}""",
        {
            "status": status,
            "result": result,
            "error": error,
            "agent": assigned_agent_id,
            "id": step_id,
        },
    )


async def request_cancel(conn: Connection, *, plan_id: UUID) -> Plan | None:
    """Flag the plan for cancellation (first request wins); None if there is no such plan."""
    return await fetch_optional(
        conn,
        Plan,
        f"""UPDATE agent_plans SET cancel_requested_at = coalesce(cancel_requested_at, now())
            WHERE id = %s RETURNING {PLAN}""",
        (plan_id,),
    )


async def get_step(conn: Connection, *, step_id: UUID, lock: bool = False) -> PlanStep | None:
    """One step by id; `lock` holds its row until the transaction ends (one runner sets it up)."""
    query = f"SELECT {STEP} FROM agent_plan_steps WHERE id = %s"
    return await fetch_optional(
        conn, PlanStep, query + " FOR UPDATE" if lock else query, (step_id,)
    )


async def close_open_steps(
    conn: Connection, *, plan_id: UUID, status: StepStatus, error: str
) -> list[PlanStep]:
    """End every step of the plan that has not finished (cancellation or failure)."""
    return await fetch_all(
        conn,
        PlanStep,
        f"""UPDATE agent_plan_steps SET status = %s, error = coalesce(error, %s),
                   completed_at = now(), lease_owner = NULL, lease_expires_at = NULL
            WHERE plan_id = %s AND status IN ('pending', 'running', 'awaiting_approval')
            RETURNING {STEP}""",
        (status, error, plan_id),
    )


async def mark_dispatched(conn: Connection, *, step_ids: Sequence[UUID]) -> None:
    """Record that these steps were handed to executors (queued) just now."""
    await conn.execute(
        "UPDATE agent_plan_steps SET dispatched_at = now() WHERE id = ANY(%s)", (list(step_ids),)
    )


async def take_step_lease(conn: Connection, *, step_id: UUID, owner: str, seconds: float) -> bool:
    """Lease the step to `owner` unless another owner holds it (call with the row locked)."""
    cur = await conn.execute(
        """UPDATE agent_plan_steps
           SET lease_owner = %(owner)s,
               lease_expires_at = now() + make_interval(secs => %(seconds)s)
           WHERE id = %(id)s AND (lease_owner IS NULL OR lease_expires_at <= now()
                                  OR lease_owner = %(owner)s)
           RETURNING id""",
        {"id": step_id, "owner": owner, "seconds": seconds},
    )
    return await cur.fetchone() is not None


async def redrive_plans(
    conn: Connection, *, grace_seconds: float, max_age_seconds: float
) -> list[UUID]:
    """Mark, and return, the plans a sweep should hand to the planner again — each at most
    once per expired lease (`redriven_at`):

    * `pending`/`executing` whose run lease (or parked lease) expired: its runner died;
    * `pending` never started, older than `grace_seconds`: its "run plan" never arrived;
    * `awaiting_approval` with a decision (older than `grace_seconds`) that no run has used.

    Plans older than `max_age_seconds` are left to `too_old_plans`."""
    cur = await conn.execute(
        """UPDATE agent_plans SET redriven_at = now()
           WHERE created_at > now() - make_interval(secs => %(max_age)s) AND (
               (status IN ('pending', 'executing') AND lease_expires_at <= now()
                AND (redriven_at IS NULL OR redriven_at < lease_expires_at))
            OR (status = 'pending' AND lease_owner IS NULL AND redriven_at IS NULL
                AND created_at <= now() - make_interval(secs => %(grace)s))
            OR (status = 'awaiting_approval' AND decisions > decisions_seen
                AND lease_owner IS NULL AND (
                    SELECT max(a.decided_at) <= now() - make_interval(secs => %(grace)s)
                           AND (redriven_at IS NULL OR redriven_at < max(a.decided_at))
                    FROM agent_approvals a WHERE a.plan_id = agent_plans.id)))
           RETURNING id""",
        {"grace": grace_seconds, "max_age": max_age_seconds},
    )
    return [row["id"] for row in await cur.fetchall()]


async def redrive_steps(conn: Connection) -> list[tuple[UUID, UUID]]:
    """Mark, and return as (plan, step), the executor steps of executing plans whose runner
    died (`running`, lease expired) — each at most once per expired lease."""
    cur = await conn.execute(
        """UPDATE agent_plan_steps s SET redriven_at = now()
           FROM agent_plans p
           WHERE p.id = s.plan_id AND p.status = 'executing' AND s.executor_required
             AND s.status = 'running' AND s.lease_expires_at <= now()
             AND (s.redriven_at IS NULL OR s.redriven_at < s.lease_expires_at)
           RETURNING s.plan_id, s.id"""
    )
    return [(row["plan_id"], row["id"]) for row in await cur.fetchall()]


async def too_old_plans(conn: Connection, *, max_age_seconds: float) -> list[UUID]:
    """Plans still `pending`/`executing` `max_age_seconds` after they were created, that no
    run is working on (no live lease on the plan, except a parked one, or on any step)."""
    cur = await conn.execute(
        f"""SELECT p.id FROM agent_plans p
            WHERE p.status IN ('pending', 'executing')
              AND p.created_at <= now() - make_interval(secs => %s)
              AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= now()
                   OR p.lease_owner = '{PARKED}')
              AND NOT EXISTS (SELECT 1 FROM agent_plan_steps s
                              WHERE s.plan_id = p.id AND s.lease_expires_at > now())
            ORDER BY p.created_at LIMIT 100""",
        (max_age_seconds,),
    )
    return [row["id"] for row in await cur.fetchall()]


async def plan_with_steps(conn: Connection, *, plan_id: UUID) -> tuple[Plan, list[PlanStep]]:
    """The plan and its steps in order, in one statement."""
    cur = await conn.execute(
        """SELECT to_jsonb(p) AS plan,
                  (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.step_number)
                   FROM agent_plan_steps s WHERE s.plan_id = p.id) AS steps
           FROM agent_plans p WHERE p.id = %s""",
        (plan_id,),
    )
    row = await cur.fetchone()
    if row is None:
        raise LookupError(f"plan {plan_id} does not exist")
    return record_from_json(Plan, row["plan"]), records_from_json(PlanStep, row["steps"])
