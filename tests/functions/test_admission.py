"""Admission control: past `MAX_RUNNING_TURNS` turns running in the process, a send is
answered 503 with `Retry-After` (problem+json) before anything is stored; sent again once a
turn has ended, it is stored once and answered."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from uuid import UUID

import httpx
import pytest

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from shared.llm.tokens import DeepSeekTokenizer
from tests.functions.test_chat_sessions import problem
from tests.support.factories import make_user
from tests.support.holds import Hold
from tests.support.scripting import Script
from tests.support.stack import Stack

Auth = Callable[[UUID], dict[str, str]]


@pytest.fixture(scope="module")
def stack(
    database_url: str, fake: FakeModelServer, models_file: Path, tokenizer: DeepSeekTokenizer
) -> Iterator[Stack]:
    running = Stack(
        database_url=database_url,
        fake=fake,
        models_file=models_file,
        tokenizer=tokenizer,
        max_running_turns=1,
        retry_after_seconds=2,
    ).start()
    yield running
    running.stop()


async def count(db: Database, user: UUID) -> int:
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM chat_messages WHERE user_id = %s AND role = 'user'", (user,)
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def test_a_send_past_the_limit_is_refused_with_retry_after_and_nothing_stored(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    first, second = await make_user(db), await make_user(db)
    hold = Hold(fake)
    script.planner(hold(reply("First, at last.")))
    chat = f"{stack.url('chat')}/chat"
    running = asyncio.create_task(http.post(chat, headers=as_user(first), json={"message": "Hi"}))
    await hold.arrived()  # the one slot is taken: a turn is at its model call

    body = {"message": "Me too", "client_message_id": "m-1"}
    refused = await http.post(chat, headers=as_user(second), json=body)
    problem(refused, 503)
    assert refused.headers["retry-after"] == "2"
    assert refused.json()["retry_after"] == 2
    assert await count(db, second) == 0

    hold.release()
    assert (await running).json()["status"] == "completed"
    again = await http.post(chat, headers=as_user(second), json=body)
    assert again.status_code == 200 and again.json()["created"] is True
    assert await count(db, second) == 1
