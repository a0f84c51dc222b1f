"""Keeping a prompt within an agent's `token_budget`, measured with the stated tokenizer — and
never shortening it without telling the model what was left out and how to get it.

A prompt is the system prompt, then segments in order. A segment is what must stay or go
together so the history stays valid: a past request with its answer, or an assistant turn with
every tool result answering it. Pinned segments (the latest user message, the current turn)
are never dropped. When the prompt is too large, in this order:

1. tool results longer than a quarter of the budget are cut to that size;
2. the oldest unpinned segments are dropped;
3. tool results are cut harder (an eighth, a sixteenth, ... of the budget, at least 40 tokens);
4. if the system prompt, the tool schemas and the pinned messages still do not fit, the prompt
   cannot be made valid: `PromptTooLarge` says by how much.

A call sent no tools (the planner's final answer) cannot fetch anything again, so its old
history is dropped first (step 2 before step 1): the current turn's results are cut only when
that is not enough.

A cut tool result ends with a note naming how many of its tokens were left out and how to see
them (call the tool again for a smaller page) — or, on a call sent no tools, to answer from
what is shown and say what is missing. Dropped messages are announced at the start of the
first user message: how many, and which tool calls they held. The system prompt is never
changed, so the cached prefix (system prompt, tools) stays byte-identical. `FittedPrompt.
left_out` describes every shortening, for the record of the step or the answer.

Everything counted here is what is sent: `count_prompt` over the wire form, tool schemas
included, so a test can count the request a server received and get the same number. The
exact count needs the tokenizer (loading it takes a quarter of a second), so a cheap upper
bound comes first: a byte-level BPE never makes more tokens than the text has UTF-8 bytes
(`UTF8_BOUND`), and a prompt whose bound fits the budget is sent as it is, counted no further.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from shared.agents.errors import PromptTooLarge
from shared.llm import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    ToolSchema,
    UserMessage,
)
from shared.llm.messages import to_wire
from shared.llm.tokens import TokenCounter, count_messages, count_tools

MIN_TOOL_RESULT = 40
CUT_NOTE = (
    "\n[Left out to fit your context budget: the last {left} of this result's {total} tokens. "
    "To see them, call {tool} again asking for less at once (where it takes them, a smaller "
    "limit, then the next pages with offset).]"
)
CUT_NOTE_NO_TOOLS = (
    "\n[Left out to fit your context budget: the last {left} of this result's {total} tokens. "
    "Answer from what is shown and say what is missing.]"
)
"""The note of a result cut on a call sent no tools: it cannot fetch the rest."""


class _Utf8Bound:
    """A `TokenCounter` that counts UTF-8 bytes: never fewer than a byte-level BPE's tokens."""

    def count(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    def truncate(self, text: str, tokens: int) -> str:
        raise AssertionError("an upper bound is only counted with, never cut by")


UTF8_BOUND = _Utf8Bound()


@dataclass(frozen=True, slots=True)
class Segment:
    """Messages kept or dropped together; `pinned` ones are always kept."""

    messages: tuple[Message, ...]
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class FittedPrompt:
    """The messages to send and what it took to fit them."""

    messages: list[Message]
    left_out: tuple[str, ...] = ()
    """What was left out, one phrase each (empty when the prompt was sent whole)."""
    cut_tokens: int = 0
    """Tokens left out of tool results (0 when none was shortened)."""


@dataclass(slots=True)
class _Fitting:
    system: SystemMessage
    segments: list[Segment]
    fixed: int
    counter: TokenCounter
    thinking: bool
    earlier: str | None
    originals: dict[str, str]
    """Tool call id → its result as stored (every cut starts from the whole text)."""
    no_tools: bool
    """The call is sent no tools: what is left out cannot be fetched again."""
    dropped: list[Message] = field(default_factory=list)
    cut: dict[str, str] = field(default_factory=dict)
    """Tool call id → what was cut from its result."""
    cut_tokens: dict[str, int] = field(default_factory=dict)
    """Tool call id → how many tokens were cut from its result."""

    def size(self) -> int:
        return self.fixed + count_messages(self.counter, self._wire(self.messages()))

    def messages(self) -> list[Message]:
        kept = [m for segment in self.segments for m in segment.messages]
        note = self.note()
        for index, message in enumerate(kept):
            if note is not None and isinstance(message, UserMessage):
                kept[index] = UserMessage(f"{note}\n\n{message.content}")
                break
        return [self.system, *kept]

    def note(self) -> str | None:
        """The announcement of what this prompt leaves out before its messages."""
        parts = [self.earlier] if self.earlier else []
        if self.dropped:
            parts.append(
                f"{len(self.dropped)} earlier messages{_calls_in(self.dropped)} were "
                "left out to fit the context budget"
            )
        if not parts:
            return None
        how = (
            "Answer from what is shown and say what is missing"
            if self.no_tools
            else "Ask again or call the tools again if you need them"
        )
        return f"(Note: {'; '.join(parts)}. {how}.)"

    def cap_tool_results(self, cap: int) -> None:
        self.segments = [
            replace(segment, messages=tuple(self._capped(m, cap) for m in segment.messages))
            for segment in self.segments
        ]

    def drop_oldest(self) -> bool:
        for index, segment in enumerate(self.segments):
            if not segment.pinned:
                self.dropped += segment.messages
                del self.segments[index]
                return True
        return False

    def kept_cuts(self) -> dict[str, str]:
        """The cuts of results still sent (a cut result may have been dropped since)."""
        kept = {
            m.tool_call_id
            for segment in self.segments
            for m in segment.messages
            if isinstance(m, ToolMessage)
        }
        return {call_id: what for call_id, what in self.cut.items() if call_id in kept}

    def left_out(self, kept_cuts: dict[str, str]) -> tuple[str, ...]:
        """What this prompt leaves out, given its `kept_cuts()`."""
        found = list(kept_cuts.values())
        if self.dropped:
            found.append(f"{len(self.dropped)} earlier messages{_calls_in(self.dropped)}")
        if self.earlier:
            found.append(self.earlier)
        return tuple(found)

    def _capped(self, message: Message, cap: int) -> Message:
        if not isinstance(message, ToolMessage):
            return message
        whole = self.originals.get(message.tool_call_id, message.content)
        total = self.counter.count(whole)
        if total <= cap:
            return message
        kept = self.counter.truncate(whole, cap)
        left = total - self.counter.count(kept)
        tool = message.name or "the tool"
        self.cut[message.tool_call_id] = f"the last {left} of {total} tokens of a {tool} result"
        self.cut_tokens[message.tool_call_id] = left
        note = CUT_NOTE_NO_TOOLS if self.no_tools else CUT_NOTE
        return replace(message, content=kept + note.format(left=left, total=total, tool=tool))

    def _wire(self, messages: Sequence[Message]) -> list[dict[str, object]]:
        return to_wire(messages, thinking=self.thinking, tools=not self.no_tools)


def _calls_in(messages: Sequence[Message]) -> str:
    calls = Counter(
        c.name for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    )
    if not calls:
        return ""
    named = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in sorted(calls.items()))
    return f" (with the results of {named})"


def fit_prompt(
    *,
    system: SystemMessage,
    segments: Sequence[Segment],
    tools: Sequence[ToolSchema],
    budget: int,
    counter: TokenCounter,
    thinking: bool,
    earlier: str | None = None,
) -> FittedPrompt:
    """The prompt within `budget` tokens, or `PromptTooLarge` (see the module docstring;
    `tools` empty: a call that cannot fetch anything again).

    `earlier` says what the caller already left out before `segments` (e.g. "messages before
    the last 200 of this conversation"); it is announced like dropped messages.
    """
    wire_tools = [tool.to_wire() for tool in tools]
    originals = {
        m.tool_call_id: m.content
        for segment in segments
        for m in segment.messages
        if isinstance(m, ToolMessage)
    }
    bound = _Fitting(
        system,
        list(segments),
        count_tools(UTF8_BOUND, wire_tools),
        UTF8_BOUND,
        thinking,
        earlier,
        originals,
        no_tools=not tools,
    )
    if bound.size() <= budget:
        return FittedPrompt(bound.messages())
    fitting = _Fitting(
        system,
        list(segments),
        count_tools(counter, wire_tools),
        counter,
        thinking,
        earlier,
        originals,
        no_tools=not tools,
    )
    size = fitting.size()
    while size > budget and fitting.no_tools and fitting.drop_oldest():
        size = fitting.size()  # history first: this call could not fetch a cut result again
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
    cuts = fitting.kept_cuts()
    return FittedPrompt(
        fitting.messages(),
        fitting.left_out(cuts),
        sum(fitting.cut_tokens[call_id] for call_id in cuts),
    )


def clip(counter: TokenCounter, text: str, tokens: int, *, how: str) -> str:
    """`text` within `tokens`; if shortened, it ends by saying how much is left out and `how`
    to get it (e.g. "ask_planner for the rest")."""
    if UTF8_BOUND.count(text) <= tokens:
        return text  # within the budget by its bytes already
    total = counter.count(text)
    if total <= tokens:
        return text
    kept = counter.truncate(text, tokens)
    left = total - counter.count(kept)
    return f"{kept}\n{CLIP_NOTE.format(left=left, total=total, how=how)}"


CLIP_NOTE = "[… the last {left} of its {total} tokens are left out here; {how}.]"
_CLIPPED = re.compile(r"^\[… the last (\d+) of its (\d+) tokens are left out here; ", re.M)


def clipped(text: str) -> list[tuple[int, int, int]]:
    """Where `clip` shortened something inside `text` (e.g. a stored delegation): the note's
    position, the tokens left out and the whole text's tokens, for each note."""
    return [(m.start(), int(m.group(1)), int(m.group(2))) for m in _CLIPPED.finditer(text)]
