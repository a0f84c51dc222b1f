"""Typed chat messages and tool calls, and their OpenAI wire form.

A history is a sequence of `Message` values. `shared.llm.history_checks` checks the rules providers
enforce on it (DeepSeek most strictly) before a request is sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_ARGUMENT_DEPTH = 32
"""Tool arguments nested deeper are refused as invalid: no tool's schema comes near it, and the
events and validators that carry arguments have recursion limits of their own."""
TOO_DEEP = f"arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
MAX_ARGUMENT_CHARS = 60_000
"""Longer arguments are refused as invalid: more than any built-in tool's fields hold (a task's
details: 50,000), and about as much as a planner's whole context budget."""
UNUSABLE_REPLAYED = 2000
"""Characters of unusable arguments sent back to the model with its history (`to_wire`): the
call is in every later prompt of the turn, and a megabyte of it would crowd out the rest."""


def parse_arguments(arguments_json: str) -> dict[str, Any] | str:
    """Tool-call arguments from the model's raw JSON text (empty means `{}`): the object, or
    why it cannot be used."""
    if (size := len(arguments_json)) > MAX_ARGUMENT_CHARS:
        return f"arguments are {size} characters long; at most {MAX_ARGUMENT_CHARS} are taken"
    try:
        value = json.loads(arguments_json.strip() or "{}")
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    except RecursionError:  # nested beyond the parser's own stack
        return TOO_DEEP
    if _deeper_than(value, MAX_ARGUMENT_DEPTH):
        return TOO_DEEP
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, got {type(value).__name__}"
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON `value` nests objects and arrays more than `limit` levels deep."""
    containers = [value] if isinstance(value, dict | list) else []
    for _ in range(limit):
        inner = (n.values() if isinstance(n, dict) else n for n in containers)
        containers = [c for nodes in inner for c in nodes if isinstance(c, dict | list)]
        if not containers:
            return False
    return bool(containers)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for.

    `arguments_json` is exactly what the model produced (sent back verbatim in the history).
    When it is not a JSON object, `arguments` is empty and `invalid_reason` says why, so the
    caller can answer the call with an error instead of losing it.
    """

    id: str
    name: str
    arguments_json: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    invalid_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None

    @classmethod
    def parse(cls, *, id: str, name: str, arguments_json: str) -> ToolCall:
        """Build a call from raw argument text, recording (not raising) invalid JSON."""
        found = parse_arguments(arguments_json)
        if isinstance(found, str):
            return cls(id, name, arguments_json, {}, found)
        return cls(id, name, arguments_json, found)

    @classmethod
    def of(cls, id: str, name: str, **arguments: Any) -> ToolCall:
        """A call with the given arguments (for building histories and tests)."""
        return cls(id, name, json.dumps(arguments), arguments)


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A model turn: text, tool calls, or both.

    `reasoning_content` is a thinking model's chain of thought (as it sent it: None when it
    sent none). In thinking mode DeepSeek wants it back on every earlier turn of a request that
    carries tools, and on the turns around tool calls in any later request
    (`passes_reasoning`); it is sent only then (other models reject the field).
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning_content: str | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call, answering `tool_call_id`."""

    tool_call_id: str
    content: str
    name: str | None = None
    role: Literal["tool"] = "tool"

    @classmethod
    def answering(cls, call: ToolCall, content: str) -> ToolMessage:
        return cls(tool_call_id=call.id, content=content, name=call.name)


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def passes_reasoning(messages: Sequence[Message], *, thinking: bool, tools: bool) -> list[bool]:
    """For each message, whether a request sends its `reasoning_content` back (assistant
    messages only; nothing with thinking off).

    DeepSeek words the rule two ways, and Parley obeys both (docs/deepseek.md):

    - the English thinking-mode guide: with `tools`, "the `reasoning_content` of all previous
      turns should be passed back … even for turns where the model did not perform a tool
      call"; without tools "it will be ignored";
    - the Chinese guide: "在两个 user 消息之间,如果模型进行了工具调用,则中间 assistant 的
      reasoning_content 需参与上下文拼接,在后续所有 user 交互轮次中必须回传给 API" — between
      two user messages where the model called tools, the assistant messages' reasoning must be
      passed back in every later request, with no condition on `tools`.

    So: with tools, every assistant message; without, every assistant message of a span
    between user messages that holds a tool call (the span, not only the calling message: the
    guide's unit is the user turn). Turns without tool calls in a request without tools carry
    none: both guides agree it is ignored there, so it is neither sent nor counted.
    """
    if not thinking:
        return [False] * len(messages)
    if tools:
        return [isinstance(m, AssistantMessage) for m in messages]
    carries = [False] * len(messages)
    span: list[int] = []  # the assistant messages since the last user message
    called = False
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage):
            span, called = [], False
        elif isinstance(message, AssistantMessage):
            span.append(index)
            called = called or bool(message.tool_calls)
            if called:
                for earlier in span:
                    carries[earlier] = True
    return carries


def to_wire(messages: Sequence[Message], *, thinking: bool, tools: bool) -> list[dict[str, Any]]:
    """The `messages` array of a chat-completions request. The assistant turns that
    `passes_reasoning` names carry their `reasoning_content` — what the model sent, an empty
    string where it sent none (DeepSeek takes an empty string as passed back; whether it
    accepts the history is for it to say, not for Parley to guess)."""
    carries = passes_reasoning(messages, thinking=thinking, tools=tools)
    return [_message_to_wire(m, reasoning=c) for m, c in zip(messages, carries, strict=True)]


def _message_to_wire(message: Message, *, reasoning: bool) -> dict[str, Any]:
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    # OpenAI wants null content beside tool calls; an empty string where there are none.
    content = message.content or (None if message.tool_calls else "")
    wire: dict[str, Any] = {"role": "assistant", "content": content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _replayed(call)},
            }
            for call in message.tool_calls
        ]
    if reasoning:
        wire["reasoning_content"] = message.reasoning_content or ""
    return wire


def _replayed(call: ToolCall) -> str:
    """A call's arguments as the model gets them back: as it wrote them, but unusable ones cut
    to `UNUSABLE_REPLAYED` characters with a note of the rest (its `tool` answer says why they
    were refused; the stored row keeps them whole)."""
    text = call.arguments_json
    if call.valid or len(text) <= UNUSABLE_REPLAYED:
        return text
    left = len(text) - UNUSABLE_REPLAYED
    return f"{text[:UNUSABLE_REPLAYED]}… [{left} more characters not shown]"
