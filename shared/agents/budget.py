"""Keeping a prompt within an agent's `token_budget`, measured with the stated tokenizer.

A prompt is the system prompt, then segments in order. A segment is what must stay or go
together so the history stays valid: a past request with its answer, or an assistant turn with
every tool result answering it. Pinned segments (the latest user message, the current turn)
are never dropped. When the prompt is too large, in this order:

1. tool results longer than a quarter of the budget are cut to that size;
2. the oldest unpinned segments are dropped (the system prompt then says how many messages
   were left out);
3. tool results are cut harder (an eighth, a sixteenth, ... of the budget, at least 40 tokens);
4. if the system prompt, the tool schemas and the pinned messages still do not fit, the prompt
   cannot be made valid: `PromptTooLarge` says by how much.

Everything counted here is what is sent: `count_prompt` over the wire form, tool schemas
included, so a test can count the request a server received and get the same number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from shared.agents.errors import PromptTooLarge
from shared.llm import Message, SystemMessage, ToolMessage, ToolSchema
from shared.llm.messages import to_wire
from shared.llm.tokens import TokenCounter, count_messages, count_tools

MIN_TOOL_RESULT = 40


@dataclass(frozen=True, slots=True)
class Segment:
    """Messages kept or dropped together; `pinned` ones are always kept."""

    messages: tuple[Message, ...]
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class FittedPrompt:
    """The messages to send and what it took to fit them."""

    messages: list[Message]
    tokens: int
    """The prompt's size (messages and tool schemas), as sent."""
    dropped: int
    """Messages left out."""
    cut: int
    """Tool results shortened."""


@dataclass(slots=True)
class _Fitting:
    system: SystemMessage
    segments: list[Segment]
    fixed: int
    counter: TokenCounter
    thinking: bool
    dropped: int = 0
    cut: int = 0

    def size(self) -> int:
        return self.fixed + count_messages(self.counter, self._wire(self.messages()))

    def messages(self) -> list[Message]:
        system = self.system
        if self.dropped:
            note = f"\n\n(Note: {self.dropped} earlier messages were left out to fit the budget.)"
            system = SystemMessage(system.content + note)
        return [system, *(m for segment in self.segments for m in segment.messages)]

    def cap_tool_results(self, cap: int) -> None:
        self.segments = [
            replace(segment, messages=tuple(self._capped(m, cap) for m in segment.messages))
            for segment in self.segments
        ]

    def drop_oldest(self) -> bool:
        for index, segment in enumerate(self.segments):
            if not segment.pinned:
                self.dropped += len(segment.messages)
                del self.segments[index]
                return True
        return False

    def _capped(self, message: Message, cap: int) -> Message:
        if not isinstance(message, ToolMessage):
            return message
        tokens = self.counter.count(message.content)
        if tokens <= cap:
            return message
        self.cut += 1
        kept = self.counter.truncate(message.content, cap)
        return replace(message, content=f"{kept}… [cut to fit the budget: {tokens - cap} tokens]")

    def _wire(self, messages: Sequence[Message]) -> list[dict[str, object]]:
        return to_wire(messages, thinking=self.thinking)


def fit_prompt(
    *,
    system: SystemMessage,
    segments: Sequence[Segment],
    tools: Sequence[ToolSchema],
    budget: int,
    counter: TokenCounter,
    thinking: bool,
) -> FittedPrompt:
    """The prompt within `budget` tokens, or `PromptTooLarge` (see the module docstring)."""
    wire_tools = [tool.to_wire() for tool in tools]
    fitting = _Fitting(system, list(segments), count_tools(counter, wire_tools), counter, thinking)
    size = fitting.size()
    if size > budget:
        fitting.cap_tool_results(max(budget // 4, MIN_TOOL_RESULT))
        size = fitting.size()
    while size > budget and fitting.drop_oldest():
        size = fitting.size()
    divisor = 8
    while size > budget and budget // divisor >= MIN_TOOL_RESULT // 2:
        fitting.cap_tool_results(max(budget // divisor, MIN_TOOL_RESULT))
        size, divisor = fitting.size(), divisor * 2
    if size > budget:
        raise PromptTooLarge(needed=size, budget=budget)
    return FittedPrompt(fitting.messages(), size, fitting.dropped, fitting.cut)
