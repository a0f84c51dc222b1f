"""`run_plan`: the planner's whole job for one plan, resumable from the tables at any point.

The run opens with one statement (`shared.db.planner_runs`): lease, `executing`, the
planner's execution, `status_update{thinking}` and everything the planner reads; then the
planner's loop (`planner_loop.PlannerRun`) works the plan, one statement per transition.

Each decision is committed before it is published, so a re-invocation continues where the
last one stopped: finished steps are reused, answered calls are not repeated. Exactly one
`done` event ends every `run_plan`, whatever happened: an unexpected exception (a bug, data
the database refused) ends the plan `failed` (`finishing`). A failure of the infrastructure
(another function unreachable, the database connection lost) propagates, and like a process
that died leaves the plan `executing` for the next invocation (at-least-once delivery) to
resume once its lease has expired.

One invocation works on a plan at a time: it holds the plan's run lease (`lease_holder`).
Another `run_plan` for the plan meanwhile returns at once — no model call, no event — with the
plan's current status and `running_elsewhere=True`.

With an invoker that hands steps off (a queue), a run that has nothing left to do but wait
for them ends (`handed_off=True`, no `done`), *parking* the plan's lease: the plan still
counts as running, and the resume sent by the step that settles takes it over. A resume that
finds nothing new (`scheduler.has_work`) parks it again and does nothing. Parking and a step
settling can cross: after parking, the run looks at the steps again and goes on if one
settled meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from shared.agents.event_data import load_query, session_emitter
from shared.agents.lease_holder import Lease, LeaseLost, holding, new_owner
from shared.agents.outcomes import PlanOutcome
from shared.agents.planner.finishing import (
    TERMINAL,
    finish_plan,
    handed_off,
    outcome_of,
)
from shared.agents.planner.planner_loop import HISTORY_LOADED, STREAMED_TOKENS, PlannerRun
from shared.agents.planner.scheduler import has_work
from shared.agents.ports import Invoker
from shared.db import leases, plans
from shared.db.planner_runs import open_planner_run
from shared.db.records import Plan
from shared.events import EventEmitter, FanoutPublisher, Publisher
from shared.kernel.errors import NotFound
from shared.llm import (
    LLMNotConfigured,
)
from shared.observability import logs, tracing

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices


async def run_plan(
    services: AgentServices,
    *,
    plan_id: UUID,
    emitter: EventEmitter | None = None,
    publisher: Publisher | None = None,
    invoker: Invoker,
    replay_ended: bool = True,
) -> PlanOutcome:
    """Answer the plan's user message: decide, act, delegate, synthesize — or resume doing so.

    Events go to `emitter` (or one made for the plan's session on `publisher`). Executor steps
    go through `invoker` (in this process, another function, a queue). Ends with exactly one `done`
    event — unless the invoker hands steps off and the run ended waiting for them (`handed_off`):
    the run that finishes the plan sends it. A plan that has already ended is answered as it ended,
    its `done` sent again unless `replay_ended` is False (a late queue message).

    Log records made meanwhile carry the plan's ids (`shared.observability.logs`); with tracing on,
    the run is an `invoke_agent planner` span, its model calls, tools and steps inside it.
    """
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "planner",
        "parley.plan.id": str(plan_id),
    }
    with (
        logs.bound(plan_id=plan_id),
        tracing.span("invoke_agent planner", attributes=attributes) as span,
    ):
        while True:
            outcome = await _run_leased(
                services, plan_id, emitter, publisher, invoker, replay_ended
            )
            if not outcome.handed_off or not await _news(services, plan_id):
                span.set_attributes(_outcome_attributes(outcome))
                return outcome


def _outcome_attributes(outcome: PlanOutcome) -> dict[str, str | bool]:
    return {
        "parley.plan.status": outcome.status,
        "parley.plan.strategy": outcome.strategy or "",
        "parley.plan.handed_off": outcome.handed_off,
        "parley.plan.running_elsewhere": outcome.running_elsewhere,
    }


async def _run_leased(
    services: AgentServices,
    plan_id: UUID,
    emitter: EventEmitter | None,
    publisher: Publisher | None,
    invoker: Invoker,
    replay_ended: bool,
) -> PlanOutcome:
    """One run holding the plan's lease (or where the plan stands, if another run holds it)."""
    unconfigured = _unconfigured(services)
    settings = services.settings
    lease = Lease("agent_plans", plan_id, new_owner(), settings.run_lease_seconds)
    async with services.db.autocommit() as conn:
        opened = await open_planner_run(
            conn,
            plan_id=plan_id,
            owner=lease.owner,
            seconds=lease.seconds,
            announce=unconfigured is None,
            private=settings.realtime_private_channels,
            tokens=STREAMED_TOKENS,
            history=HISTORY_LOADED,
            trace_id=tracing.trace_id(),
            load=load_query(services, plan_id),
        )
    if opened is None:
        return await _not_leased(services, plan_id, emitter, publisher, replay_ended)
    plan = opened.plan
    logs.annotate(session_id=plan.session_id, message_id=plan.user_message_id)
    tracing.annotate(
        {
            "gen_ai.conversation.id": str(plan.session_id),
            "gen_ai.agent.id": str(plan.planner_agent_id),
        }
    )
    emitter = emitter or _emitter(services, opened.plan, publisher)
    if opened.was_parked and not has_work(opened.steps):
        await _park(services, lease)
        return await handed_off(services, plan_id)
    if opened.was_parked and unconfigured is None:
        await emitter.emit(
            "status_update", {"status": "thinking"}, plan_id=plan_id, agent_id=opened.planner.id
        )
    await emitter.deliver(opened.events)
    if opened.tokens_last is not None:
        emitter.reserve_tokens(opened.tokens_last, STREAMED_TOKENS, opened.load)
    runs: list[PlannerRun] = []  # made on first use: a run with no model to call makes none

    async def work() -> PlanOutcome:
        if not runs:
            runs.append(PlannerRun.of(services, opened, emitter, invoker, lease))
        return await runs[0].drive()  # again, after a decision arrived: where it stopped

    try:
        async with holding(services.db, lease):
            outcome = await finish_plan(
                services, opened.plan, emitter, work, unconfigured=unconfigured
            )
            if outcome.handed_off:
                lease.park_seconds = settings.plan_park_seconds
            return outcome
    except LeaseLost:
        return await _elsewhere(services, plan_id)


def _unconfigured(services: AgentServices) -> LLMNotConfigured | None:
    """Why no model can be called (checked before anything changes), or None."""
    try:
        services.llm  # noqa: B018 - built on first use; raises when not configured
    except LLMNotConfigured as exc:
        return exc
    return None


def _emitter(services: AgentServices, plan: Plan, publisher: Publisher | None) -> EventEmitter:

    return session_emitter(services, plan.session_id, publisher or FanoutPublisher())


async def _not_leased(
    services: AgentServices,
    plan_id: UUID,
    emitter: EventEmitter | None,
    publisher: Publisher | None,
    replay_ended: bool,
) -> PlanOutcome:
    """A plan this run did not lease: one that ended (answered as it ended), or one another
    run holds (where it stands)."""
    plan = await _read_plan(services, plan_id)
    if plan.status not in TERMINAL or not replay_ended:
        return await _standing(services, plan)
    emitter = emitter or _emitter(services, plan, publisher)
    return await finish_plan(services, plan, emitter, None)


async def _park(services: AgentServices, lease: Lease) -> None:
    """Give a resumed plan's lease back as parked: it still waits for its steps."""
    async with services.db.autocommit() as conn:
        await leases.park_plan(
            conn,
            plan_id=lease.row_id,
            owner=lease.owner,
            seconds=services.settings.plan_park_seconds,
        )
    lease.settled = True


async def _news(services: AgentServices, plan_id: UUID) -> bool:
    """Whether a plan waiting for handed-off steps has something to do now."""
    async with services.db.autocommit() as conn:
        steps = await plans.list_steps(conn, plan_id=plan_id)
    return has_work(steps)


async def _elsewhere(services: AgentServices, plan_id: UUID) -> PlanOutcome:
    """What a run that lost the plan's lease returns: where the plan stands."""
    return await _standing(services, await _read_plan(services, plan_id))


async def _read_plan(services: AgentServices, plan_id: UUID) -> Plan:
    async with services.db.autocommit() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id)
    if plan is None:
        raise NotFound(f"Plan {plan_id} not found")
    return plan


async def _standing(services: AgentServices, plan: Plan) -> PlanOutcome:
    """Where `plan` stands: `running_elsewhere` while it has not ended."""
    outcome = await outcome_of(services, plan)
    return outcome._replace(running_elsewhere=plan.status not in TERMINAL)
