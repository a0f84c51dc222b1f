"""One live run per plan and per step: concurrent invocations leave the work to the holder of
the row's lease; a dead holder's expired lease is taken over, and the work resumed."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import StepOutcome, run_executor_step, run_plan, start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker
from shared.events import EventEmitter
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.holds import Hold, plan_row, set_plan_lease
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored


def script_lookup(script: Script, first: Any) -> None:
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, first, complete_with_results("Tasks"))


async def test_concurrent_invocations_of_one_plan_and_one_step_leave_the_work_to_one(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Water the plants")
    hold = Hold(fake)
    script_lookup(script, hold(reply(tool_call("list_tasks"))))
    started = await start_turn(services, user_id=user, session_id=None, message="tasks?")
    first_events = InMemoryPublisher()
    first = asyncio.create_task(
        InProcessInvoker(services, first_events).run_plan(plan_id=started.plan_id)
    )
    await hold.arrived()  # the first invocation is inside the executor's first call

    others = InMemoryPublisher()
    second = await InProcessInvoker(services, others).run_plan(plan_id=started.plan_id)
    step = (await stored(db, started.plan_id)).steps[0]
    again = await run_executor_step(services, step_id=step.id, attempt=1, publisher=others)

    assert (second.running_elsewhere, second.status, second.answer) == (True, "executing", None)
    assert (again.running_elsewhere, again.status) == (True, "running")
    assert others.events == []  # the losers said nothing
    assert len(fake.requests) == 2  # and asked the model nothing
    hold.release()
    outcome = await first

    assert outcome.status == "completed" and not outcome.running_elsewhere
    assert "Tasks: Water the plants" in (outcome.answer or "")
    assert len(requests_of(fake, "planner")) == 2  # plan, synthesis: each once
    assert len(requests_of(fake, "executor", LOOKUP)) == 2  # list_tasks, complete: each once
    assert [e.type for e in first_events.events].count("done") == 1
    after = await plan_row(db, started.plan_id)
    assert (after["lease_owner"], after["lease_expires_at"]) == (None, None)  # given back
    assert (await stored(db, started.plan_id)).steps[0].lease_owner is None


async def test_a_live_lease_elsewhere_is_left_alone_and_an_expired_one_is_taken_over(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(reply("Hello again."))
    started = await start_turn(services, user_id=user, session_id=None, message="hi")
    await set_plan_lease(db, started.plan_id, seconds=3600, status="executing")

    busy = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=started.plan_id)

    assert (busy.running_elsewhere, busy.status) == (True, "executing")
    assert fake.requests == []
    await set_plan_lease(db, started.plan_id, seconds=-1)  # its runner died: no renewals

    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=started.plan_id
    )

    assert (resumed.status, resumed.answer, resumed.running_elsewhere) == (
        "completed",
        "Hello again.",
        False,
    )
    assert len(fake.requests) == 1
    assert (await plan_row(db, started.plan_id))["lease_owner"] is None


async def eventually(check: Any, what: str) -> None:
    """Wait (bounded) for the database to show `check()`; the lease clock is real time."""
    for _ in range(200):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw: {what}")


async def test_the_holder_renews_its_lease_and_stops_when_another_took_it_over(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(run_lease_seconds=1)
    user = await make_user(db)
    hold = Hold(fake)
    script.planner(hold(reply("Hello from whoever holds the plan.")))
    started = await start_turn(services, user_id=user, session_id=None, message="hi")
    memory = InMemoryPublisher()
    emitter = EventEmitter(db, memory, session_id=started.session_id)
    invoker = InProcessInvoker(services, memory)
    running = asyncio.create_task(
        run_plan(services, plan_id=started.plan_id, emitter=emitter, invoker=invoker)
    )
    await hold.arrived()
    first = (await plan_row(db, started.plan_id))["lease_expires_at"]

    async def renewed() -> bool:
        return bool((await plan_row(db, started.plan_id))["lease_expires_at"] > first)

    await eventually(renewed, "the holder renewing its lease while its model call is held")
    await set_plan_lease(db, started.plan_id, seconds=3600)  # a stall: someone took over
    stopped = await running

    assert (stopped.running_elsewhere, stopped.status) == (True, "executing")
    assert [e.type for e in memory.events] == ["status_update"]  # thinking; no done: it stopped
    assert len(fake.requests) == 1
    await set_plan_lease(db, started.plan_id, seconds=-1)
    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=started.plan_id
    )
    assert (resumed.status, resumed.answer) == ("completed", "Hello from whoever holds the plan.")
    assert len(fake.requests) == 2  # the stopped run's call, asked again by the new holder
    rows = await stored(db, started.plan_id)
    assert [m.role for m in rows.messages] == ["user", "assistant"]  # the stopped run: nothing


class Recording(InProcessInvoker):
    """The in-process invoker, keeping every step outcome the planner got."""

    def __init__(self, services: Services, publisher: InMemoryPublisher) -> None:
        super().__init__(services, publisher)
        self.outcomes: list[StepOutcome] = []

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        outcome = await super().run_step(step_id=step_id, attempt=attempt)
        self.outcomes.append(outcome)
        return outcome


class Died(BaseException):
    """The process died (nothing in it handles that, hence not an `Exception`)."""


class DiesInvokingSteps(InProcessInvoker):
    """A planner process that dies as it hands a step over."""

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        raise Died("died handing the step over")


async def test_the_planner_waits_for_a_step_leased_elsewhere_then_takes_it_over(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(run_lease_seconds=1)
    user = await make_user(db)
    await make_task(db, user, title="Water the plants")
    script_lookup(script, reply(tool_call("list_tasks")))
    started = await start_turn(services, user_id=user, session_id=None, message="tasks?")
    emitter = EventEmitter(db, InMemoryPublisher(), session_id=started.session_id)
    with pytest.raises(Died):
        await run_plan(
            services,
            plan_id=started.plan_id,
            emitter=emitter,
            invoker=DiesInvokingSteps(services, InMemoryPublisher()),
        )
    (step,) = (await stored(db, started.plan_id)).steps
    async with db.service() as conn:  # an executor elsewhere holds it, and will die too
        await conn.execute(
            "UPDATE agent_plan_steps SET lease_owner = 'executor-elsewhere', "
            "lease_expires_at = now() + interval '0.5 seconds' WHERE id = %s",
            (step.id,),
        )
    invoker = Recording(services, InMemoryPublisher())

    outcome = await invoker.run_plan(plan_id=started.plan_id)

    assert outcome.status == "completed"
    assert invoker.outcomes[0].running_elsewhere  # found busy: waited for the lease
    assert (invoker.outcomes[-1].status, invoker.outcomes[-1].running_elsewhere) == (
        "completed",
        False,
    )
    assert len(requests_of(fake, "executor", LOOKUP)) == 2
    assert "Tasks: Water the plants" in (outcome.answer or "")
