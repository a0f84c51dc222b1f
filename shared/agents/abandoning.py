"""Giving up on a plan or a step that no run will finish, cleanly.

Two cases reach here, both from the sweeper (`shared.sweeper`): a queue message that kept
failing until it landed in its dead-letter queue, and a plan still unfinished past
`PLAN_MAX_AGE_SECONDS`. Either way the row is taken with a run lease first, so nothing
running is overwritten (a live run means: try again at the next sweep), and it ends the way
any failure ends:

* a plan → `failed` with a readable error, its open steps, threads, executions and approvals
  closed, then `error` and `done` events;
* a step → `failed` with the error, its thread and execution closed, `step_completed`; the
  caller then resumes its plan, which goes on without it (dependents are skipped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from shared.agents.events import session_emitter, step_completed_data
from shared.agents.finishing import TERMINAL, close_failed
from shared.agents.leases import new_owner
from shared.db import dialogue, executions, leases, plans
from shared.events import Publisher

if TYPE_CHECKING:
    from shared.services import Services

OPEN_STEP = frozenset({"pending", "running", "awaiting_approval"})


async def fail_plan(services: Services, plan_id: UUID, *, error: str, publisher: Publisher) -> bool:
    """End the plan `failed` with `error`, unless it has ended already. False: a live run
    holds it, and nothing was changed."""
    async with services.db.service() as conn:
        leased = await leases.take_plan_lease(
            conn, plan_id=plan_id, owner=new_owner(),
            seconds=services.settings.run_lease_seconds,
        )  # fmt: skip
        if leased is None:
            current = await plans.get_plan(conn, plan_id=plan_id)
            return current is None or current.status in TERMINAL
    emitter = session_emitter(services, leased.session_id, publisher)
    await close_failed(services, leased, emitter, error)
    return True


async def fail_step(services: Services, step_id: UUID, *, error: str, publisher: Publisher) -> bool:
    """End the step `failed` with `error`, unless it has ended already. False: a live run
    holds it, and nothing was changed."""
    seconds = services.settings.run_lease_seconds
    async with services.db.autocommit() as conn:
        step = await plans.get_step(conn, step_id=step_id)
        plan = await plans.get_plan(conn, plan_id=step.plan_id) if step else None
    if step is None or plan is None or step.status not in OPEN_STEP:
        return True
    emitter = session_emitter(services, plan.session_id, publisher)
    async with emitter.unit() as (conn, outbox):
        step = await plans.get_step(conn, step_id=step_id, lock=True)
        if step is None or step.status not in OPEN_STEP:
            return True
        if not await plans.take_step_lease(conn, step_id=step_id, owner=new_owner(),
                                           seconds=seconds):  # fmt: skip
            return False
        await dialogue.abandon_open_threads(conn, plan_id=plan.id, error=error, step_id=step_id)
        await executions.close_open_executions(
            conn, plan_id=plan.id, status="failed", error=error, step_id=step_id
        )
        failed = await plans.update_step(conn, step_id=step_id, status="failed", error=error)
        outbox.add("step_completed", step_completed_data(failed, "abandoned"), plan_id=plan.id)
    return True
