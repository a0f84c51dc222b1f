"""Typed chat messages and tool calls, and their OpenAI wire form.

A history is a sequence of `Message` values. `shared.llm.history` checks the rules providers
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
    sent none). DeepSeek wants it back on every earlier turn of a request that carries tools
    in thinking mode (`to_wire`); it is sent only then (other models reject the field).
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


def passes_reasoning(*, thinking: bool, tools: bool) -> bool:
    """Whether a request sends earlier turns' reasoning back: in thinking mode, when it carries
    tools. DeepSeek's thinking-mode guide: with `tools`, "the `reasoning_content` of all previous
    turns should be passed back … even for turns where the model did not perform a tool call"
    (else 400); without, "it will be ignored" (so it is not sent, nor counted)."""
    return thinking and tools


def to_wire(messages: Sequence[Message], *, reasoning: bool) -> list[dict[str, Any]]:
    """The `messages` array of a chat-completions request; with `reasoning`, every assistant
    turn carries its `reasoning_content` — what the model sent, an empty string where it sent
    none (DeepSeek takes an empty string as passed back; whether it accepts the history is for
    it to say, not for Parley to guess)."""
    return [_message_to_wire(message, reasoning=reasoning) for message in messages]


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
