"""Histories providers accept: the two rules behind DeepSeek's most common 400s.

1. Every `tool` message answers a tool call of the assistant turn right before it (only tool
   messages in between), and every such call is answered before the next non-tool message.
2. For thinking models, an assistant turn with tool calls carries its `reasoning_content`
   (non-empty: DeepSeek V4 rejects an empty string).

`check_history` raises `InvalidHistory` (strict mode, nothing is sent); `repair_history` returns
a history that obeys both rules: orphan and duplicate tool results are dropped, unanswered calls
get a synthetic "not answered" result, and a missing `reasoning_content` is replaced by a note
naming that turn's calls (unique per turn: identical placeholders make DeepSeek degrade).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from shared.llm.errors import InvalidHistory
from shared.llm.messages import AssistantMessage, Message, ToolCall, ToolMessage

ProblemKind = Literal[
    "orphan_tool_result", "duplicate_tool_result", "unanswered_tool_call", "missing_reasoning"
]

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


def find_problems(messages: Sequence[Message], *, thinking: bool) -> list[HistoryProblem]:
    """Every rule the history breaks (empty when it is valid)."""
    return _scan(messages, thinking=thinking)[1]


def repair_history(messages: Sequence[Message], *, thinking: bool) -> list[Message]:
    """A copy of the history that obeys both rules (unchanged when it already does)."""
    return _scan(messages, thinking=thinking)[0]


def check_history(messages: Sequence[Message], *, thinking: bool, model: str | None = None) -> None:
    """Raise `InvalidHistory` listing every problem, before anything is sent."""
    if problems := find_problems(messages, thinking=thinking):
        raise InvalidHistory([str(p) for p in problems], model=model)


def _scan(
    messages: Sequence[Message], *, thinking: bool
) -> tuple[list[Message], list[HistoryProblem]]:
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
            if thinking and not (message.reasoning_content or "").strip():
                names = ", ".join(call.name for call in message.tool_calls)
                detail = f"assistant tool-call turn ({names}) lacks reasoning_content"
                problems.append(HistoryProblem(index, "missing_reasoning", detail))
                message = replace(message, reasoning_content=_reasoning_note(message.tool_calls))
            pending = {call.id: call for call in message.tool_calls}
            opened_at = index
        repaired.append(message)
    problems += _unanswered(pending, opened_at)
    repaired += [ToolMessage.answering(call, UNANSWERED_RESULT) for call in pending.values()]
    return repaired, problems


def _unanswered(pending: dict[str, ToolCall], index: int) -> list[HistoryProblem]:
    return [
        HistoryProblem(index, "unanswered_tool_call", f"tool call {call.id!r} ({call.name}) "
                       "has no tool result before the next non-tool message")
        for call in pending.values()
    ]  # fmt: skip


def _reasoning_note(calls: Sequence[ToolCall]) -> str:
    listed = ", ".join(f"{call.name} ({call.id})" for call in calls)
    return f"[Reasoning for this step was not recorded. It called: {listed}.]"
