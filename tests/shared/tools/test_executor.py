"""The executor's structured answers: unknown tools, bad arguments, failures, repeats."""

from __future__ import annotations

import asyncio
import json
import logging
from uuid import uuid4

import pytest
from pydantic import BaseModel

from shared.db import Database, dialogue
from shared.db.database import Connection
from shared.tools import (
    CallContext,
    DatabaseTool,
    ToolArgs,
    ToolExecutor,
    ToolOutput,
    ToolRegistry,
    TurnCache,
)
from tests.support.domain_rows import Crew, call, execution_row, make_task, snapshot


async def test_unknown_tool_is_answered_and_counted(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    result = await call(executor, crew.as_executor(), "drop_database")
    assert result.error == "unknown_tool"
    assert json.loads(result.content())["error"] == "unknown_tool"
    assert (await execution_row(db, crew.execution.id)).tool_call_count == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"limit": ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"limit": 500}', "limit: Input should be less than or equal to 100"),
        ('{"status": ["someday"]}', "status.0: Input should be"),
        ('{"colour": "red"}', "colour: Extra inputs are not permitted"),
    ],
)
async def test_bad_arguments_are_invalid_arguments(
    executor: ToolExecutor, crew: Crew, raw: str, expected: str
) -> None:
    result = await call(executor, crew.as_executor(), "list_tasks", raw=raw)
    assert result.error == "invalid_arguments"
    assert expected in str(result.payload["message"])


async def test_empty_argument_string_means_no_arguments(executor: ToolExecutor, crew: Crew) -> None:
    assert (await call(executor, crew.as_executor(), "list_tasks", raw="")).ok


async def test_denial_comes_before_argument_checks_and_records_unparsed_text(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    result = await call(executor, crew.as_executor(), "create_task", raw="{not json")
    assert result.error == "permission_denied"
    async with db.service() as conn:
        messages = await dialogue.list_thread_messages(conn, thread_id=crew.thread.id)
    assert messages[-1].tool_args == {"unparsed": "{not json"}


async def test_a_missing_agent_row_is_denied_and_still_recorded(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    ghost = CallContext(agent_id=uuid4(), user_id=crew.user_id, thread=crew.thread)
    result = await call(executor, ghost, "list_tasks")
    assert result.error == "permission_denied"
    async with db.service() as conn:
        messages = await dialogue.list_thread_messages(conn, thread_id=crew.thread.id)
    assert (messages[-1].message_type, messages[-1].sender_agent_id) == ("permission_denied", None)


class Empty(ToolArgs):
    pass


class Count(ToolOutput):
    calls: int


async def leaky(conn: Connection, args: Empty) -> BaseModel:
    raise RuntimeError("password=hunter2 at db.internal:5432")


async def test_unexpected_errors_are_logged_but_not_shown_to_the_model(
    db: Database, crew: Crew, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry([DatabaseTool("leaky", "breaks", Empty, "read", leaky)])
    with caplog.at_level(logging.ERROR, logger="shared.tools.executor"):
        result = await call(ToolExecutor(db, registry), crew.as_executor(), "leaky")
    assert result.error == "tool_failed"
    assert "hunter2" not in result.content()
    assert "leaky" in caplog.text and "hunter2" in caplog.text


async def test_a_tool_that_hangs_is_answered_with_tool_failed(db: Database, crew: Crew) -> None:
    never = asyncio.Event()

    async def hangs(conn: Connection, args: Empty) -> BaseModel:
        await never.wait()
        return Count(calls=0)

    registry = ToolRegistry([DatabaseTool("hangs", "waits", Empty, "read", hangs)])
    result = await call(
        ToolExecutor(db, registry, timeout_seconds=0.05), crew.as_executor(), "hangs"
    )
    assert (result.error, result.payload["message"]) == ("tool_failed", "the tool timed out")


async def test_identical_calls_in_one_turn_run_once(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    await make_task(db, crew.user_id, title="Only one")
    turn = TurnCache()
    context = crew.as_executor()

    first = await call(executor, context, "list_tasks", turn, raw='{"limit": 25}')
    second = await call(executor, context, "list_tasks", turn, raw="{ }")  # same once defaulted
    other = await call(executor, context, "list_tasks", turn, raw='{"limit": 5}')
    next_turn = await call(executor, context, "list_tasks", TurnCache(), raw="{}")

    assert first.ok, first.payload
    assert (first.repeat_of, second.repeat_of, other.repeat_of) == (None, first.call_id, None)
    assert second.payload == first.payload
    assert json.loads(second.content())["repeated"] is True
    assert next_turn.repeat_of is None


async def test_a_write_in_the_turn_makes_earlier_reads_stale(
    db: Database, executor: ToolExecutor, crew: Crew
) -> None:
    turn = TurnCache()
    context = crew.as_planner()
    before = await call(executor, context, "list_tasks", turn)
    created = await call(executor, context, "create_task", turn, title="New")
    again = await call(executor, context, "create_task", turn, title="New")
    after = await call(executor, context, "list_tasks", turn)

    assert created.ok and again.repeat_of == created.call_id
    assert after.repeat_of is None
    assert (before.payload["count"], after.payload["count"]) == (0, 1)
    assert len((await snapshot(db))["tasks"]) >= 1


async def test_concurrent_identical_calls_share_one_run(db: Database, crew: Crew) -> None:
    runs = 0
    started, release = asyncio.Event(), asyncio.Event()

    async def counted(conn: Connection, args: Empty) -> BaseModel:
        nonlocal runs
        runs += 1
        started.set()
        await release.wait()
        return Count(calls=runs)

    executor = ToolExecutor(
        db, ToolRegistry([DatabaseTool("counted", "c", Empty, "read", counted)])
    )
    turn = TurnCache()
    calls = [
        asyncio.create_task(call(executor, crew.as_executor(), "counted", turn)) for _ in range(3)
    ]
    await started.wait()
    release.set()
    results = await asyncio.gather(*calls)

    assert runs == 1
    assert sorted(r.repeat_of is None for r in results) == [False, False, True]
    assert {r.payload["calls"] for r in results} == {1}
