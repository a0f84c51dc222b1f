"""Sending twice (the same `client_message_id`), over HTTP: a resend is the original turn —
never a second message, never a second run of something that happened, and never silently
another message (issue 21, defect 6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import pytest

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from tests.functions.test_chat_sessions import problem
from tests.support.factories import make_user
from tests.support.holds import Hold
from tests.support.scripting import Script
from tests.support.stack import Stack
from tests.support.user_facing import assert_names_no_setting

Auth = Callable[[UUID], dict[str, str]]
pytestmark = pytest.mark.usefixtures("script")


async def broadcasts(db: Database, plan_id: str) -> list[str]:
    """The types of the events the database sent for the plan, in `seq` order."""
    async with db.service() as conn:
        cur = await conn.execute(
            """SELECT payload->>'type' AS type FROM realtime.messages
                WHERE payload->>'plan_id' = %s ORDER BY (payload->>'seq')::bigint""",
            (plan_id,),
        )
        return [row["type"] for row in await cur.fetchall()]


async def send(stack: Stack, http: httpx.AsyncClient, user: dict[str, str], **body: Any) -> Any:
    return await http.post(f"{stack.url('chat')}/chat", headers=user, json=body)


async def test_the_same_id_with_another_message_is_refused_naming_the_conflict(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user = as_user(await make_user(db))
    script.planner(reply("Noted."))
    first = (await send(stack, http, user, message="Buy milk", client_message_id="m1")).json()
    again = problem(
        await send(
            stack,
            http,
            user,
            message="Buy bread",
            client_message_id="m1",
            session_id=first["session_id"],
        ),
        422,
    )
    assert again["type"] == "https://parley.invalid/problems/client-message-id-reused"
    assert "client_message_id" in str(again["detail"]) and "different message" in str(
        again["detail"]
    )
    assert (again["client_message_id"], again["message_id"], again["plan_id"]) == (
        "m1",
        first["message_id"],
        first["plan_id"],
    )
    assert_names_no_setting(str(again["detail"]))
    # Without a session id the first send's session is found the same way.
    problem(await send(stack, http, user, message="Buy bread", client_message_id="m1"), 422)


async def test_a_resend_of_an_ended_turn_broadcasts_nothing_new(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user = as_user(await make_user(db))
    script.planner(reply("Noted."))
    first = (await send(stack, http, user, message="Buy milk", client_message_id="m2")).json()
    sent = await broadcasts(db, first["plan_id"])
    assert sent[-1] == "done"
    for asked in ({}, {"stream": True}, {"wait": False}):
        again = await send(
            stack,
            http,
            user,
            message="Buy milk",
            client_message_id="m2",
            session_id=first["session_id"],
            **asked,
        )
        assert again.status_code in (200, 202), again.text
        assert again.headers["content-type"] == "application/json"
        body = again.json()
        assert (body["created"], body["status"], body["plan_id"]) == (
            False,
            "completed",
            first["plan_id"],
        )
    assert await broadcasts(db, first["plan_id"]) == sent  # no done sent again


async def test_a_streamed_resend_of_a_running_turn_says_where_to_watch_it(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user = as_user(await make_user(db))
    hold = Hold(fake)
    script.planner(hold(reply("Done thinking.")))
    first = await send(stack, http, user, message="Think", client_message_id="m3", wait=False)
    assert first.status_code == 202
    await hold.arrived()  # the turn runs (in the background), holding its lease

    try:
        resent = await send(stack, http, user, message="Think", client_message_id="m3", stream=True)
    finally:
        hold.release()

    assert resent.status_code == 202, resent.text  # not an empty stream
    body = resent.json()
    plan = first.json()["plan_id"]
    assert (body["created"], body["plan_id"], body["status"]) == (False, plan, "executing")
    assert body["watch"]["realtime_channel"] == f"session:{body['session_id']}"
    assert resent.headers["location"] == f"{stack.url('agent_planner')}/plans/{plan}"
    assert body["watch"]["messages"].startswith(stack.url("chat"))
