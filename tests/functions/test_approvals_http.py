"""Approvals and double submits over HTTP: a destructive write waits for the user; a second
message while a turn runs is refused with 409."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
import pytest

from local.deepseek import FakeModelServer, RecordedRequest, reply, tool_call
from shared.db import Database
from tests.functions.test_chat_sessions import problem
from tests.support.domain_rows import fetch_row, make_event
from tests.support.factories import make_user
from tests.support.scripting import Script, tool_results
from tests.support.stack import Stack

Auth = Callable[[UUID], dict[str, str]]
pytestmark = pytest.mark.usefixtures("script")  # every test starts with a fresh script


def report(request: RecordedRequest) -> Any:
    return reply(f"Outcome: {tool_results(request)[-1][:300]}")


async def ask_to_delete(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> tuple[dict[str, str], UUID, dict[str, Any]]:
    user_id = await make_user(db)
    event = await make_event(db, user_id, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    script.planner(reply(tool_call("delete_calendar_event", event_id=str(event))), report)
    user = as_user(user_id)
    sent = await http.post(
        f"{stack.url('chat')}/chat", json={"message": "Cancel the dentist"}, headers=user
    )
    assert sent.status_code == 200, sent.text
    return user, event, sent.json()


async def test_a_destructive_write_waits_and_a_rejection_keeps_the_data(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user, event, turn = await ask_to_delete(stack, http, db, as_user, script)
    assert turn["status"] == "awaiting_approval"
    planner = stack.url("agent_planner")
    (waiting,) = (
        await http.get(f"{planner}/plans/{turn['plan_id']}/approvals", headers=user)
    ).json()["approvals"]
    assert (waiting["kind"], waiting["tool_name"], waiting["status"]) == (
        "tool_call",
        "delete_calendar_event",
        "pending",
    )
    assert waiting["tool_args"] == {"event_id": str(event)}

    decided = await http.post(
        f"{planner}/plans/{turn['plan_id']}/approvals/{waiting['id']}",
        json={"decision": "reject", "text": "keep it"},
        headers=user,
    )
    assert decided.status_code == 200, decided.text
    assert decided.json()["approval"]["status"] == "rejected"
    assert decided.json()["plan"]["status"] == "completed"
    assert "Not approved" in decided.json()["plan"]["answer"]
    row = await fetch_row(db, "calendar_events", event)
    assert row is not None and row["deleted_at"] is None  # not written

    again = await http.post(
        f"{planner}/plans/{turn['plan_id']}/approvals/{waiting['id']}",
        json={"decision": "approve"},
        headers=user,
    )
    problem(again, 409)


async def test_an_approved_destructive_write_runs_once(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user, event, turn = await ask_to_delete(stack, http, db, as_user, script)
    planner = stack.url("agent_planner")
    detail = (await http.get(f"{planner}/plans/{turn['plan_id']}", headers=user)).json()
    (waiting,) = detail["approvals"]
    decided = await http.post(
        f"{planner}/plans/{turn['plan_id']}/approvals/{waiting['id']}",
        json={"decision": "approve"},
        headers=user,
    )
    assert decided.json()["plan"]["status"] == "completed"
    row = await fetch_row(db, "calendar_events", event)
    assert row is not None and row["deleted_at"] is not None  # written
    rerun = await http.post(
        f"{stack.url('chat')}/chat",
        headers=user,
        json={
            "session_id": turn["session_id"],
            "message": "Cancel the dentist",
            "client_message_id": None,
        },
    )
    assert rerun.status_code == 200  # the session is free again
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM chat_messages WHERE plan_id = %s AND role = 'tool' "
            "AND tool_name = 'delete_calendar_event'",
            (UUID(turn["plan_id"]),),
        )
        assert await cur.fetchone() == {"n": 1}  # the delete ran exactly once


async def test_deciding_needs_the_owner_and_a_valid_decision(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user, _, turn = await ask_to_delete(stack, http, db, as_user, script)
    planner = stack.url("agent_planner")
    (waiting,) = (
        await http.get(f"{planner}/plans/{turn['plan_id']}/approvals", headers=user)
    ).json()["approvals"]
    url = f"{planner}/plans/{turn['plan_id']}/approvals/{waiting['id']}"
    intruder = as_user(await make_user(db))
    problem(await http.post(url, json={"decision": "approve"}, headers=intruder), 404)
    problem(await http.post(url, json={"decision": "maybe"}, headers=user), 422)
    problem(await http.post(url, json={"decision": "answer", "text": "x"}, headers=user), 422)
    problem(await http.get(f"{planner}/plans/{turn['plan_id']}/approvals", headers=intruder), 404)
    # A new message while the turn waits for the decision is refused.
    hello = {"session_id": turn["session_id"], "message": "Hello?"}
    busy = problem(await http.post(f"{stack.url('chat')}/chat", headers=user, json=hello), 409)
    assert "pending approval" in str(busy["detail"])
    assert (busy["plan_id"], busy["plan_status"]) == (turn["plan_id"], "awaiting_approval")


async def test_a_second_message_while_a_turn_runs_gets_409(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user = as_user(await make_user(db))
    arrived = threading.Event()

    def hold(request: RecordedRequest) -> Any:
        arrived.set()
        return reply("Done thinking.").stalled(after=0)

    script.planner(hold)
    session = (await http.post(f"{stack.url('chat')}/sessions", json={}, headers=user)).json()
    first = asyncio.create_task(
        http.post(
            f"{stack.url('chat')}/chat",
            headers=user,
            json={"session_id": session["id"], "message": "Think hard", "client_message_id": "a"},
        )
    )
    assert await asyncio.to_thread(arrived.wait, 10)
    other = {"session_id": session["id"], "message": "Another thing"}
    second = problem(await http.post(f"{stack.url('chat')}/chat", headers=user, json=other), 409)
    assert "still running" in str(second["detail"]) and second["plan_status"] == "executing"
    resend = await http.post(
        f"{stack.url('chat')}/chat",
        headers=user,
        json={"session_id": session["id"], "message": "Think hard", "client_message_id": "a"},
    )
    assert resend.status_code == 200 and resend.json()["running_elsewhere"] is True
    fake.release()
    assert (await first).json()["answer"] == "Done thinking."
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM chat_messages WHERE session_id = %s AND role = 'user'",
            (UUID(session["id"]),),
        )
        assert await cur.fetchone() == {"n": 1}


async def test_deleting_a_session_cancels_its_waiting_turn_and_closes_its_approvals(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    """Issue 21, defect 1: a deleted session's destructive write can no longer be approved;
    its plan and approvals answer 404 like every route of a deleted session."""
    user, event, turn = await ask_to_delete(stack, http, db, as_user, script)
    planner, plan = stack.url("agent_planner"), turn["plan_id"]
    (waiting,) = (await http.get(f"{planner}/plans/{plan}/approvals", headers=user)).json()[
        "approvals"
    ]

    deleted = await http.delete(f"{stack.url('chat')}/sessions/{turn['session_id']}", headers=user)
    assert deleted.status_code == 204

    decide = f"{planner}/plans/{plan}/approvals/{waiting['id']}"
    problem(await http.post(decide, json={"decision": "approve"}, headers=user), 404)
    problem(await http.get(f"{planner}/plans/{plan}", headers=user), 404)
    problem(await http.get(f"{planner}/plans/{plan}/approvals", headers=user), 404)
    problem(await http.post(f"{planner}/plans/{plan}/cancel", headers=user), 404)
    transcript = f"{stack.url('chat')}/plans/{plan}/transcript"
    problem(await http.get(transcript, headers=user), 404)
    row = await fetch_row(db, "calendar_events", event)
    assert row is not None and row["deleted_at"] is None  # never written
    async with db.service() as conn:
        cur = await conn.execute(
            """SELECT p.status, a.status AS approval,
                      (SELECT payload->'data'->>'status' FROM realtime.messages
                        WHERE topic = 'session:' || p.session_id AND event = 'done'
                        ORDER BY (payload->>'seq')::bigint DESC LIMIT 1) AS done
                 FROM agent_plans p JOIN agent_approvals a ON a.plan_id = p.id
                WHERE p.id = %s""",
            (UUID(plan),),
        )
        found = await cur.fetchone()
    # Closed at once (nobody runs it), and announced: the last `done` says so.
    assert found == {"status": "cancelled", "approval": "cancelled", "done": "cancelled"}


async def test_deleting_a_session_stops_its_running_turn_before_its_next_call(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user_id = await make_user(db)
    user = as_user(user_id)
    event = await make_event(db, user_id, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    arrived = threading.Event()

    def hold(request: RecordedRequest) -> Any:
        arrived.set()  # the planner's call is in flight: its turn runs, holding its lease
        return reply(tool_call("delete_calendar_event", event_id=str(event))).stalled(after=0)

    script.planner(hold, report)
    sent = asyncio.create_task(
        http.post(f"{stack.url('chat')}/chat", headers=user, json={"message": "Cancel the dentist"})
    )
    assert await asyncio.to_thread(arrived.wait, 10)
    async with db.service() as conn:
        cur = await conn.execute("SELECT id FROM chat_sessions WHERE user_id = %s", (user_id,))
        session = await cur.fetchone()
    assert session is not None
    deleted = await http.delete(f"{stack.url('chat')}/sessions/{session['id']}", headers=user)
    assert deleted.status_code == 204
    fake.release()

    ended = (await sent).json()
    assert ended["status"] == "cancelled"  # stopped before the delete, not waiting for approval
    row = await fetch_row(db, "calendar_events", event)
    assert row is not None and row["deleted_at"] is None
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM agent_approvals WHERE plan_id = %s",
            (UUID(ended["plan_id"]),),
        )
        assert await cur.fetchone() == {"n": 0}


async def test_a_decision_with_prefer_respond_async_is_accepted_at_once(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    """Issue 21, defect 7: `Prefer: respond-async` on a decision answers 202 before the plan
    resumes, as it does on `POST /chat`."""
    user, event, turn = await ask_to_delete(stack, http, db, as_user, script)
    planner, plan = stack.url("agent_planner"), turn["plan_id"]
    (waiting,) = (await http.get(f"{planner}/plans/{plan}/approvals", headers=user)).json()[
        "approvals"
    ]
    decided = await http.post(
        f"{planner}/plans/{plan}/approvals/{waiting['id']}",
        json={"decision": "approve"},
        headers={**user, "Prefer": "respond-async"},
    )
    assert decided.status_code == 202, decided.text
    assert decided.headers["preference-applied"] == "respond-async"
    assert decided.headers["location"] == f"{planner}/plans/{plan}"
    body = decided.json()
    assert body["approval"]["status"] == "approved" and body["plan"]["handed_off"] is True
    await stack.heard.wait_for(
        lambda events: any(  # the plan resumes after the answer
            e.type == "done" and str(e.plan_id) == plan and e.data["status"] == "completed"
            for e in events
        )
    )
    row = await fetch_row(db, "calendar_events", event)
    assert row is not None and row["deleted_at"] is not None
