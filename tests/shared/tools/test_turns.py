"""The per-turn de-duplication cache (pure)."""

from __future__ import annotations

import asyncio

import pytest

from shared.tools import ToolResult, TurnCache
from shared.tools.results import failure


def runner(result: ToolResult) -> tuple[list[int], object]:
    runs: list[int] = []

    async def run() -> ToolResult:
        runs.append(1)
        return result

    return runs, run


async def test_a_repeat_gets_the_first_result_without_running() -> None:
    turn = TurnCache()
    runs, run = runner(ToolResult("a", "t", {"v": 1}))
    first = await turn.once("k", "a", run, writes=False)  # type: ignore[arg-type]
    second = await turn.once("k", "b", run, writes=False)  # type: ignore[arg-type]
    assert len(runs) == 1
    assert (first.repeat_of, second.repeat_of, second.call_id) == (None, "a", "b")


async def test_failures_are_not_kept() -> None:
    turn = TurnCache()
    runs, run = runner(failure("a", "t", "tool_failed", "boom"))
    await turn.once("k", "a", run, writes=False)  # type: ignore[arg-type]
    again = await turn.once("k", "b", run, writes=False)  # type: ignore[arg-type]
    assert len(runs) == 2 and again.repeat_of is None


async def test_a_successful_write_forgets_everything_else() -> None:
    turn = TurnCache()
    read_runs, read = runner(ToolResult("r", "read", {}))
    write_runs, write = runner(ToolResult("w", "write", {}))
    await turn.once("read", "r1", read, writes=False)  # type: ignore[arg-type]
    await turn.once("write", "w1", write, writes=True)  # type: ignore[arg-type]
    repeat = await turn.once("write", "w2", write, writes=True)  # type: ignore[arg-type]
    await turn.once("read", "r2", read, writes=False)  # type: ignore[arg-type]
    assert (len(read_runs), len(write_runs), repeat.repeat_of) == (2, 1, "w1")


async def test_a_cancelled_first_call_lets_the_waiting_one_run() -> None:
    turn = TurnCache()
    started, never = asyncio.Event(), asyncio.Event()

    async def slow() -> ToolResult:
        started.set()
        await never.wait()
        raise AssertionError("unreachable")

    first = asyncio.create_task(turn.once("k", "a", slow, writes=False))
    await started.wait()
    _, fast = runner(ToolResult("b", "t", {"v": 2}))
    # Tasks start in creation order: the second finds the first in flight and waits on it
    # before the cancellation below reaches the first.
    second = asyncio.create_task(turn.once("k", "b", fast, writes=False))  # type: ignore[arg-type]
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    result = await second
    assert (result.payload, result.repeat_of) == ({"v": 2}, None)
