"""Histories providers accept: tool calls and their results paired, as DeepSeek requires.

Every `tool` message answers a tool call of the assistant turn right before it (only tool
messages in between), and every such call is answered before the next non-tool message.
Breaking it is always the caller's bug (Parley builds its histories from stored rows that pair
by construction), so it is checked before anything is sent.

`check_history` raises `InvalidHistory` (strict mode, nothing is sent); `repair_history` returns
a history that obeys the rule: orphan and duplicate tool results are dropped, unanswered calls
get a synthetic "not answered" result.

Reasoning is not checked here: a thinking reply without `reasoning_content` is passed back as
it came (`messages.to_wire`), and whether DeepSeek accepts that is for DeepSeek to say — a
local refusal would fail a turn the API might have served, and hide the API's own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from shared.llm.errors import InvalidHistory
from shared.llm.messages import AssistantMessage, Message, ToolCall, ToolMessage

ProblemKind = Literal["orphan_tool_result", "duplicate_tool_result", "unanswered_tool_call"]

UNANSWERED_RESULT = (
    "Tool call was not answered: no result was recorded for it. Do not assume it ran; "
    "call the tool again if you still need its result."
)


@dataclass(frozen=True, slots=True)
class HistoryProblem:
    """One broken rule, at the index of the offending message in the original history."""

    index: int
    kind: ProblemKind
    detail: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.detail}"


def find_problems(messages: Sequence[Message]) -> list[HistoryProblem]:
    """Every pairing the history breaks (empty when it is valid)."""
    return _scan(messages)[1]


def repair_history(messages: Sequence[Message]) -> list[Message]:
    """A copy of the history whose calls and results pair (unchanged when they already do)."""
    return _scan(messages)[0]


def check_history(messages: Sequence[Message], *, model: str | None = None) -> None:
    """Raise `InvalidHistory` listing every problem, before anything is sent."""
    if problems := find_problems(messages):
        raise InvalidHistory([str(p) for p in problems], model=model)


def _scan(messages: Sequence[Message]) -> tuple[list[Message], list[HistoryProblem]]:
    repaired: list[Message] = []
    problems: list[HistoryProblem] = []
    pending: dict[str, ToolCall] = {}  # calls of the open assistant turn not yet answered
    answered: set[str] = set()
    opened_at = -1
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in pending:
                del pending[call_id]
                answered.add(call_id)
                repaired.append(message)
            elif call_id in answered:
                detail = f"second tool result for call {call_id!r}"
                problems.append(HistoryProblem(index, "duplicate_tool_result", detail))
            else:
                detail = f"tool result for {call_id!r} answers no preceding assistant tool call"
                problems.append(HistoryProblem(index, "orphan_tool_result", detail))
            continue
        problems += _unanswered(pending, opened_at)
        repaired += [ToolMessage.answering(call, UNANSWERED_RESULT) for call in pending.values()]
        pending, answered = {}, set()
        if isinstance(message, AssistantMessage) and message.tool_calls:
            pending = {call.id: call for call in message.tool_calls}
            opened_at = index
        repaired.append(message)
    problems += _unanswered(pending, opened_at)
    repaired += [ToolMessage.answering(call, UNANSWERED_RESULT) for call in pending.values()]
    return repaired, problems


def _unanswered(pending: dict[str, ToolCall], index: int) -> list[HistoryProblem]:
    return [
        HistoryProblem(
            index,
            "unanswered_tool_call",
            f"tool call {call.id!r} ({call.name}) "
            "has no tool result before the next non-tool message",
        )
        for call in pending.values()
    ]
