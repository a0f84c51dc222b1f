"""De-duplication of identical tool calls within one agent turn.

A *turn* is one run of an agent's tool loop answering one input: the planner answering one user
message, or an executor answering one delegation (or one answer from the planner). The agent
core creates a `TurnCache` when the turn starts, passes it to every `execute` of that turn, and
drops it when the turn ends; nothing is shared between turns or agents.

Two calls are identical when they name the same tool with the same validated arguments
(defaults filled in, keys sorted). The second gets the first's result, marked as a repeat, and
the tool does not run again — also when both arrive concurrently. Two rules keep that honest:

* a successful `write` call empties the cache (keeping only itself): after a write, earlier
  reads may be stale and an earlier identical write may be meant again
  (`done → backlog → done`);
* `tool_failed` results are not kept, so a later identical call tries again.

Permission is checked before the cache is consulted, so a repeat never outlives a revoked
permission.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from shared.tools.results import ToolResult


@dataclass(frozen=True, slots=True)
class _Entry:
    call_id: str
    result: asyncio.Future[ToolResult]


class TurnCache:
    """The tool results of one agent turn, keyed by tool name and canonical arguments."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    async def once(
        self,
        key: str,
        call_id: str,
        run: Callable[[], Awaitable[ToolResult]],
        *,
        writes: bool,
    ) -> ToolResult:
        """`run()`'s result, or the result of the identical earlier call of this turn."""
        while (entry := self._entries.get(key)) is not None:
            try:
                first = await asyncio.shield(entry.result)
            except asyncio.CancelledError:
                if entry.result.cancelled():
                    continue  # the first call was cancelled, not us: run it ourselves
                raise
            return first.as_repeat(call_id=call_id, of=entry.call_id)
        entry = _Entry(call_id, asyncio.get_running_loop().create_future())
        self._entries[key] = entry
        try:
            result = await run()
        except BaseException:
            self._drop(key, entry)
            entry.result.cancel()
            raise
        if result.error == "tool_failed":
            self._drop(key, entry)
        elif writes and result.ok:
            self._entries = {key: entry}
        entry.result.set_result(result)
        return result

    def _drop(self, key: str, entry: _Entry) -> None:
        if self._entries.get(key) is entry:
            del self._entries[key]
