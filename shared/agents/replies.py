"""A model's reply made Parley's before anything stores it: own call ids, storable text.

* **Call ids.** Providers number tool calls as they like; some OpenAI-compatible servers restart
  at `call_0` in every response. Parley gives each call its own id, unique within the plan, so
  a stored result, a recorded denial or a user's approval can only ever belong to the call it
  was made for. The model sees Parley's ids in its history, which is all the protocol needs
  (a `tool` message names the id of the call it answers).
* **NUL and lone surrogates.** Postgres text and `jsonb` cannot hold U+0000 or half a UTF-16
  pair. A model can produce either (in its text, its reasoning, a tool name, or — escaped as
  `\\u0000` / `\\udfff` — inside tool arguments); each one is replaced by U+FFFD, which shows
  that something was there, and the turn goes on (`shared.kernel.text.storable`).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from typing import Any

from shared.kernel.text import storable
from shared.llm import Completion, ToolCall


def new_call_id() -> str:
    """A fresh call id (64 random bits: unique within any plan)."""
    return f"call_{secrets.token_hex(8)}"


def own_reply(completion: Completion) -> Completion:
    """`completion` with Parley's own call ids and nothing Postgres cannot store."""
    message = completion.message
    content = message.content
    reasoning = message.reasoning_content
    owned = replace(
        message,
        content=storable(content) if content is not None else None,
        reasoning_content=storable(reasoning) if reasoning is not None else None,
        tool_calls=tuple(_own_call(call) for call in message.tool_calls),
    )
    return replace(completion, message=owned)


def _own_call(call: ToolCall) -> ToolCall:
    call_id = new_call_id()
    raw = storable(call.arguments_json)
    if raw != call.arguments_json:
        call = ToolCall.parse(id=call_id, name=call.name, arguments_json=raw)
    if call.valid and _unstorable(call.arguments):
        cleaned = _cleaned(dict(call.arguments))
        call = ToolCall(call.id, call.name, json.dumps(cleaned, ensure_ascii=False), cleaned)
    return replace(call, id=call_id, name=storable(call.name))


def _unstorable(value: Any) -> bool:
    if isinstance(value, str):
        return storable(value) != value
    if isinstance(value, dict):
        return any(_unstorable(k) or _unstorable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_unstorable(item) for item in value)
    return False


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(k): _cleaned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cleaned(item) for item in value]
    return value
