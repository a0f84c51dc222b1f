"""Assembles a streamed reply: text, reasoning and tool calls arriving in fragments."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from uuid import uuid4

from shared.llm.messages import AssistantMessage, ToolCall


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ReplyAssembler:
    """Accumulates deltas into one assistant message.

    Parallel tool calls are told apart by their `index`; their `id` and name come first and the
    argument text follows in pieces, which are joined and parsed only at the end.
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None

    def add_text(self, piece: str) -> None:
        self._text.append(piece)

    def add_reasoning(self, piece: str) -> None:
        self._reasoning.append(piece)

    def add_tool_call(
        self, index: int | None, *, id: str | None, name: str | None, arguments: str | None
    ) -> None:
        """One tool-call delta; `index` None (some local servers) means "the call with this id,
        else the latest call", or a new one when there is none."""
        if index is None:
            index = self._index_of(id)
        partial = self._calls.setdefault(index, _PartialCall())
        if id and not partial.id:
            partial.id = id
        if name and name != partial.name:
            # OpenAI sends the name once; tolerate servers that repeat, grow or split it.
            cumulative = not partial.name or name.startswith(partial.name)
            partial.name = name if cumulative else partial.name + name
        if arguments:
            partial.arguments.append(arguments)

    def _index_of(self, id: str | None) -> int:
        for index, partial in self._calls.items():
            if id and partial.id == id:
                return index
        if self._calls and not id:
            return max(self._calls)
        return max(self._calls, default=-1) + 1

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls in index order, arguments parsed (invalid JSON is recorded on the call)."""
        calls = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            call_id = partial.id or f"call_{uuid4().hex[:24]}"
            arguments = "".join(partial.arguments)
            call = ToolCall.parse(id=call_id, name=partial.name, arguments_json=arguments)
            if not partial.name:
                call = replace(call, invalid_reason="the model sent no function name")
            calls.append(call)
        return tuple(calls)

    def message(self, tool_calls: tuple[ToolCall, ...] | None = None) -> AssistantMessage:
        """The assembled assistant message (pass `tool_calls` to reuse ids already issued)."""
        return AssistantMessage(
            content=self.text or None,
            tool_calls=self.tool_calls() if tool_calls is None else tool_calls,
            reasoning_content=self.reasoning or None,
        )
