"""`POST /chat` that answers 202 Accepted while the turn runs on (`wait: false`,
`Prefer: respond-async`), here with the planner in the chat's process (`in_process`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from uuid import UUID

import httpx
import pytest

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from shared.events import Event
from shared.llm.tokens import DeepSeekTokenizer
from tests.functions.test_chat_sessions import problem
from tests.support.factories import make_user
from tests.support.holds import Hold, plan_row
from tests.support.scripting import Script
from tests.support.stack import Stack

Auth = Callable[[UUID], dict[str, str]]


class Endings:
    """A sink that knows which plans have sent `done` (readable from any thread)."""

    def __init__(self) -> None:
        self._ended: set[UUID] = set()
        self._changed = threading.Condition()

    async def publish(self, events: Sequence[Event]) -> None:
        with self._changed:
            self._ended |= {e.plan_id for e in events if e.type == "done" and e.plan_id}
            self._changed.notify_all()

    async def aclose(self) -> None:
        return None

    async def ended(self, plan_id: UUID) -> None:
        def wait() -> bool:
            with self._changed:
                return self._changed.wait_for(lambda: plan_id in self._ended, timeout=15)

        assert await asyncio.to_thread(wait), f"plan {plan_id} never sent done"


@pytest.fixture(scope="module")
def endings() -> Endings:
    return Endings()


@pytest.fixture(scope="module")
def stack(
    database_url: str,
    fake: FakeModelServer,
    models_file: Path,
    tokenizer: DeepSeekTokenizer,
    endings: Endings,
) -> Iterator[Stack]:
    running = Stack(
        database_url=database_url,
        fake=fake,
        models_file=models_file,
        tokenizer=tokenizer,
        sinks=[endings],
    ).start()
    yield running
    running.stop()


async def test_wait_false_answers_202_while_the_turn_runs_on(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
    endings: Endings,
) -> None:
    user = as_user(await make_user(db))
    hold = Hold(fake)
    script.planner(hold(reply("Here is your answer.")))

    sent = await http.post(
        f"{stack.url('chat')}/chat", headers=user, json={"message": "Hi", "wait": False}
    )

    assert sent.status_code == 202, sent.text
    body = sent.json()
    plan_id, session_id = UUID(body["plan_id"]), body["session_id"]
    assert body["status"] == "pending" and body["created"] is True
    assert body["watch"] == {
        "realtime_channel": f"session:{session_id}",
        "private": True,
        "plan": f"{stack.url('agent_planner')}/plans/{plan_id}",
        # Absolute, as `plan` is (issue 21, defect 7): the chat function as it was reached.
        "messages": f"{stack.url('chat')}/sessions/{session_id}/messages",
    }
    assert sent.headers["location"] == body["watch"]["plan"]
    assert "preference-applied" not in sent.headers
    await hold.arrived()  # the turn runs on after the 202: its model call is in flight
    assert (await plan_row(db, plan_id))["status"] == "executing"
    hold.release()
    await endings.ended(plan_id)
    listed = await http.get(body["watch"]["messages"], headers=user)
    assert [m["content"] for m in listed.json()["messages"]] == ["Hi", "Here is your answer."]


async def test_prefer_respond_async_asks_for_202_and_a_resend_reports_the_turn(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    endings: Endings,
) -> None:
    user = as_user(await make_user(db))
    script.planner(reply("Done."))
    headers = {**user, "Prefer": "respond-async, wait=5"}
    body = {"message": "Hi", "client_message_id": "accept-1"}

    sent = await http.post(f"{stack.url('chat')}/chat", headers=headers, json=body)
    assert sent.status_code == 202, sent.text
    assert sent.headers["preference-applied"] == "respond-async"
    await endings.ended(UUID(sent.json()["plan_id"]))

    again = await http.post(f"{stack.url('chat')}/chat", headers=headers, json=body)
    assert again.status_code == 202
    assert (again.json()["plan_id"], again.json()["created"], again.json()["status"]) == (
        sent.json()["plan_id"],
        False,
        "completed",
    )
    waited = await http.post(
        f"{stack.url('chat')}/chat", headers=headers, json={**body, "wait": True}
    )
    assert waited.status_code == 200  # the body's `wait` wins over the header
    assert waited.json()["answer"] == "Done."


async def test_streaming_and_not_waiting_exclude_each_other(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    user_id = await make_user(db)
    sent = await http.post(
        f"{stack.url('chat')}/chat",
        headers=as_user(user_id),
        json={"message": "Hi", "stream": True, "wait": False},
    )
    assert "drop `wait: false`" in str(problem(sent, 422)["detail"])
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM chat_messages WHERE user_id = %s", (user_id,)
        )
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0
