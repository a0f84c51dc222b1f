"""Giving up on a plan or a step that no run will finish, cleanly.

Two cases reach here, both from the sweeper (`shared.usecases.sweeper`): a queue message that kept
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

from typing import TYPE_CHECKING, Literal
from uuid import UUID

from shared.agents.event_data import session_emitter, step_completed_data
from shared.agents.lease_holder import new_owner
from shared.agents.planner.finishing import TERMINAL, close_failed
from shared.db import dialogue, executions, leases, plans
from shared.events import Publisher

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices

OPEN_STEP = frozenset({"pending", "running", "awaiting_approval"})
Abandoning = Literal["failed", "ended", "busy", "gone"]
"""What `fail_plan` / `fail_step` found: it was `failed` now; it had `ended` already; `busy`, a
live run holds it and nothing changed (the next sweep tries again); `gone`, no such row (its
user was deleted, or the message named none)."""


async def fail_plan(
    services: AgentServices, plan_id: UUID, *, error: str, publisher: Publisher
) -> Abandoning:
    """End the plan `failed` with `error`, unless it has ended already or a live run holds it."""
    async with services.db.service() as conn:
        leased = await leases.take_plan_lease(
            conn,
            plan_id=plan_id,
            owner=new_owner(),
            seconds=services.settings.run_lease_seconds,
        )
        if leased is None:
            current = await plans.get_plan(conn, plan_id=plan_id)
            if current is None:
                return "gone"
            return "ended" if current.status in TERMINAL else "busy"
    emitter = session_emitter(services, leased.session_id, publisher)
    await close_failed(services, leased, emitter, error)
    return "failed"


async def fail_step(
    services: AgentServices, step_id: UUID, *, error: str, publisher: Publisher
) -> Abandoning:
    """End the step `failed` with `error`, unless it has ended already or a live run holds it."""
    seconds = services.settings.run_lease_seconds
    async with services.db.autocommit() as conn:
        step = await plans.get_step(conn, step_id=step_id)
        plan = await plans.get_plan(conn, plan_id=step.plan_id) if step else None
    if step is None or plan is None:
        return "gone"
    if step.status not in OPEN_STEP:
        return "ended"
    emitter = session_emitter(services, plan.session_id, publisher)
    async with emitter.unit() as (conn, outbox):
        step = await plans.get_step(conn, step_id=step_id, lock=True)
        if step is None:
            return "gone"
        if step.status not in OPEN_STEP:
            return "ended"
        if not await plans.take_step_lease(
            conn, step_id=step_id, owner=new_owner(), seconds=seconds
        ):
            return "busy"
        await dialogue.abandon_open_threads(conn, plan_id=plan.id, error=error, step_id=step_id)
        await executions.close_open_executions(
            conn, plan_id=plan.id, status="failed", error=error, step_id=step_id
        )
        failed = await plans.update_step(conn, step_id=step_id, status="failed", error=error)
        outbox.add("step_completed", step_completed_data(failed, "abandoned"), plan_id=plan.id)
    return "failed"
