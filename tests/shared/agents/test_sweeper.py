"""The sweeper with the in-process transport (the local stack runs it every minute): a plan
whose runner died is finished once its lease has expired, a decision nobody resumed the plan
for is used, and a plan past its age is failed cleanly."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import UUID

import psycopg
import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.services import Services
from shared.usecases.approval_decisions import decide_approval, list_approvals
from shared.usecases.sweeper import sweep
from tests.shared.agents.test_resume import script_garden
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_event, make_task
from tests.support.factories import make_user
from tests.support.holds import as_user, scalar, set_plan_lease
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.kills import Kill
from tests.support.scripting import Script
from tests.support.stored_rows import of_type, stored
from tests.support.user_facing import assert_names_no_setting


@pytest.fixture
def watched(make_services: MakeServices) -> tuple[Services, InMemoryPublisher]:
    """Services whose every published event is also kept here (as the sweeper publishes)."""
    events = InMemoryPublisher()
    services = make_services()
    services.event_sinks = (events,)
    return services, events


async def ended(events: InMemoryPublisher, plan_id: UUID) -> None:
    async with asyncio.timeout(15):
        await events.wait_for(
            lambda seen: any(e.type == "done" and e.plan_id == plan_id for e in seen)
        )


async def test_a_plan_whose_runner_died_is_finished_once_its_lease_expires(
    db: Database, watched: tuple[Services, InMemoryPublisher], script: Script
) -> None:
    services, events = watched
    user = await make_user(db)
    await make_task(db, user, title="Weed the garden")
    script_garden(script)
    after_write = "NEW.message_type = 'tool_result' AND NEW.tool_name = 'create_task'"
    async with Kill(db, "agent_chat_messages", after_write, on="UPDATE"):
        with pytest.raises(psycopg.OperationalError):
            await run_turn(
                services,
                user_id=user,
                session_id=None,
                message="garden plan",
                publisher=InMemoryPublisher(),
            )
    plan_id = await scalar(db, "SELECT id FROM agent_plans WHERE user_id = %s", user)
    await set_plan_lease(db, plan_id, seconds=60)  # the dead runner's, still live

    assert (await sweep(services)).plans_redriven == []
    await set_plan_lease(db, plan_id, seconds=-1)  # ... and now expired
    first = await sweep(services)
    second = await sweep(services)  # while the re-driven run works, or after it

    assert (first.plans_redriven, second.plans_redriven) == ([plan_id], [])
    await ended(events, plan_id)
    assert (await stored(db, plan_id)).plan.status == "completed"
    assert (
        await scalar(
            db, "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s", user, "Buy seeds"
        )
        == 1
    )
    assert len([e for e in of_type(events, "done") if e.plan_id == plan_id]) == 1


async def test_a_decision_nobody_resumed_the_plan_for_is_used(
    db: Database,
    watched: tuple[Services, InMemoryPublisher],
    script: Script,
    fake: FakeModelServer,
) -> None:
    services, events = watched
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    script.planner(
        reply(tool_call("delete_calendar_event", event_id=str(event))),
        reply("Deleted the dentist."),
    )
    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="cancel the dentist",
        publisher=InMemoryPublisher(),
    )
    plan_id = turn.started.plan_id
    (pending,) = await list_approvals(services, as_user(user), plan_id)
    await decide_approval(
        services, as_user(user), plan_id=plan_id, approval_id=pending.id, decision="approve"
    )
    # The invocation that recorded the decision died before it resumed the plan.
    assert (await sweep(services)).plans_redriven == []  # it may still be about to
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_approvals SET decided_at = now() - interval '5 minutes' "
            "WHERE plan_id = %s",
            (plan_id,),
        )

    assert (await sweep(services)).plans_redriven == [plan_id]
    await ended(events, plan_id)
    assert (await stored(db, plan_id)).plan.status == "completed"
    assert await scalar(
        db, "SELECT deleted_at IS NOT NULL FROM calendar_events WHERE id = %s", event
    )
    assert (await sweep(services)).plans_redriven == []


async def test_a_plan_past_its_age_that_nobody_runs_is_failed_cleanly(
    db: Database,
    watched: tuple[Services, InMemoryPublisher],
    script: Script,
    fake: FakeModelServer,
) -> None:
    services, events = watched
    user = await make_user(db)
    script.planner(reply("Never sent."))
    async with Kill(db, "agent_plans", "NEW.status = 'executing'", on="UPDATE"):
        with pytest.raises(psycopg.OperationalError):
            await run_turn(
                services,
                user_id=user,
                session_id=None,
                message="hello",
                publisher=InMemoryPublisher(),
            )
    plan_id = await scalar(db, "SELECT id FROM agent_plans WHERE user_id = %s", user)
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_plans SET created_at = now() - interval '2 hours' WHERE id = %s",
            (plan_id,),
        )

    report = await sweep(services)

    assert (report.plans_too_old, report.plans_redriven) == ([plan_id], [])
    after = await stored(db, plan_id)
    assert after.plan.status == "failed"
    assert after.plan.error is not None and "did not finish within 1 hour" in after.plan.error
    assert_names_no_setting(after.plan.error)
    (done,) = [e for e in of_type(events, "done") if e.plan_id == plan_id]
    assert done.data["status"] == "failed"
    assert fake.requests == []


async def test_a_sweep_folds_what_each_backend_added_to_the_rollups(
    db: Database, services: Services, script: Script
) -> None:
    user = await make_user(db)
    script.planner(reply("Hi!"))
    await run_turn(
        services, user_id=user, session_id=None, message="hi", publisher=InMemoryPublisher()
    )
    shards = (
        "SELECT (SELECT count(*) FROM parley_private.execution_rollup WHERE shard <> 0) "
        "+ (SELECT count(*) FROM parley_private.plan_rollup WHERE shard <> 0)"
    )
    totals = "SELECT sum(executions) FROM execution_stats_daily"
    before = await scalar(db, totals)
    assert await scalar(db, shards) > 0  # the turn's backend added rows of its own

    await sweep(services)

    assert await scalar(db, shards) == 0
    assert await scalar(db, totals) == before
