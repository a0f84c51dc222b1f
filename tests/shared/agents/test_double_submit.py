"""Sends that overlap: a resend is the original turn; a new message while a turn runs is a
409 (`TurnStillRunning`) — decided by Postgres row locks, whatever process each send hits."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, RecordedRequest, reply, tool_call
from shared.agents import TurnStarted, TurnStillRunning, request_cancel, start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.kernel.errors import Conflict
from shared.services import Services
from tests.support.domain_rows import make_event
from tests.support.factories import make_session, make_user
from tests.support.holds import Hold, scalar, set_plan_lease
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script

SENDS = 8


def asked(request: RecordedRequest) -> str:
    """The user's message the planner is answering."""
    return str([m for m in request.messages if m.get("role") == "user"][-1]["content"])


async def counts(db: Database, user: UUID) -> tuple[int, int, int]:
    """(sessions, user messages, plans) of the user."""
    sessions = await scalar(db, "SELECT count(*) FROM chat_sessions WHERE user_id = %s", user)
    messages = await scalar(
        db, "SELECT count(*) FROM chat_messages WHERE user_id = %s AND role = 'user'", user
    )
    plans = await scalar(db, "SELECT count(*) FROM agent_plans WHERE user_id = %s", user)
    return int(sessions), int(messages), int(plans)


@pytest.mark.parametrize("known_session", [False, True])
async def test_one_message_sent_many_times_at_once_is_stored_once_with_one_plan(
    db: Database, services: Services, known_session: bool
) -> None:
    user = await make_user(db)
    session_id = (await make_session(db, user)).id if known_session else None

    sends: list[TurnStarted] = await asyncio.gather(
        *(
            start_turn(
                services,
                user_id=user,
                session_id=session_id,
                message="Plan my week",
                client_message_id="send-1",
            )
            for _ in range(SENDS)
        )
    )

    assert len({(s.session_id, s.message_id, s.plan_id) for s in sends}) == 1
    assert [s.created for s in sends].count(True) == 1
    assert await counts(db, user) == (1, 1, 1)


async def test_different_messages_sent_at_once_to_one_session_start_one_turn(
    db: Database, services: Services
) -> None:
    user = await make_user(db)
    session = await make_session(db, user)

    sends = await asyncio.gather(
        *(
            start_turn(services, user_id=user, session_id=session.id, message=f"message {n}")
            for n in range(SENDS)
        ),
        return_exceptions=True,
    )

    started = [s for s in sends if isinstance(s, TurnStarted)]
    refused = [s for s in sends if isinstance(s, TurnStillRunning)]
    assert (len(started), len(refused)) == (1, SENDS - 1)
    assert {r.plan_id for r in refused} == {started[0].plan_id}
    assert await counts(db, user) == (1, 1, 1)


async def test_a_new_message_while_a_turn_runs_is_refused_until_it_has_finished(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    hold = Hold(fake)
    held = hold(reply("First answer."))
    script.planner(
        lambda request: held(request) if asked(request) == "first" else reply("Second answer.")
    )
    running = asyncio.create_task(
        run_turn(
            services,
            user_id=user,
            session_id=None,
            message="first",
            client_message_id="m-1",
            publisher=InMemoryPublisher(),
        )
    )
    await hold.arrived()
    resent = await start_turn(
        services, user_id=user, session_id=None, message="first", client_message_id="m-1"
    )

    with pytest.raises(Conflict) as refused:
        await start_turn(services, user_id=user, session_id=resent.session_id, message="second")

    assert not resent.created  # a resend while its turn runs is that turn
    assert str(refused.value) == (
        f"A turn is still running in this session: wait for it, or cancel plan {resent.plan_id}."
    )
    hold.release()
    first = await running
    assert (first.started.plan_id, first.plan.answer) == (resent.plan_id, "First answer.")
    second = await run_turn(
        services,
        user_id=user,
        session_id=resent.session_id,
        message="second",
        publisher=InMemoryPublisher(),
    )
    assert (second.started.created, second.plan.answer) == (True, "Second answer.")
    assert await counts(db, user) == (1, 2, 2)


async def test_a_turn_waiting_for_approval_holds_the_session_until_decided_or_cancelled(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    script.planner(reply(tool_call("delete_calendar_event", event_id=str(event))))
    waiting = await run_turn(
        services, user_id=user, session_id=None, message="delete it", publisher=InMemoryPublisher()
    )
    assert waiting.plan.status == "awaiting_approval"

    with pytest.raises(TurnStillRunning) as refused:
        await start_turn(
            services, user_id=user, session_id=waiting.started.session_id, message="something else"
        )

    assert str(refused.value) == (
        "A turn in this session is waiting for your decision: answer the pending approval "
        f"first, or cancel plan {waiting.started.plan_id}."
    )
    await request_cancel(services, plan_id=waiting.started.plan_id, user_id=user)
    accepted = await start_turn(
        services, user_id=user, session_id=waiting.started.session_id, message="something else"
    )
    assert accepted.created and accepted.plan_id != waiting.started.plan_id


async def test_a_turn_whose_runner_died_does_not_block_the_session_and_stays_resumable(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(reply("Answer to the first."), reply("Answer to the second."))
    dead = await start_turn(services, user_id=user, session_id=None, message="first")
    await set_plan_lease(db, dead.plan_id, seconds=3600, status="executing")
    with pytest.raises(TurnStillRunning):  # its runner is alive: wait
        await start_turn(services, user_id=user, session_id=dead.session_id, message="second")
    await set_plan_lease(db, dead.plan_id, seconds=-1)  # now it died: the lease ran out

    second = await start_turn(services, user_id=user, session_id=dead.session_id, message="second")
    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=dead.plan_id)

    assert second.created
    assert (resumed.status, resumed.answer) == ("completed", "Answer to the first.")
