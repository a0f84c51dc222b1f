"""Replies rendered exactly as OpenAI and DeepSeek send them: chunks, completions, usage."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from itertools import zip_longest
from typing import Any
from uuid import uuid4

from local.deepseek.script import RecordedRequest, Reply, ScriptedCall, ScriptedUsage

FINGERPRINT = "fp_parley_fake"


AUTO_REASONING = "Thinking it through."
"""The reasoning a thinking reply carries when its script gives none (`Reply.reasoning_shown`)."""


def reasoning_of(reply: Reply, *, thinking: bool) -> str | None:
    """The `reasoning_content` a reply carries: none unless thinking, then what it scripts."""
    if not thinking or reply.reasoning_shown == "absent":
        return None
    if reply.reasoning_shown == "empty":
        return ""
    return "".join(reply.reasoning) or AUTO_REASONING


def assistant_message(reply: Reply, reasoning: str | None) -> dict[str, Any]:
    """The reply as the assistant message a client sends back in its next request."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if reply.tool_calls:
        message["tool_calls"] = [_call_json(call, call.id or "") for call in reply.tool_calls]
    return message


def usage_json(usage: ScriptedUsage) -> dict[str, Any]:
    """Both dialects at once: DeepSeek's cache fields and OpenAI's `*_details`."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_hit_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "prompt_cache_hit_tokens": usage.cache_hit_tokens,
        "prompt_cache_miss_tokens": usage.prompt_tokens - usage.cache_hit_tokens,
    }


def call_ids(reply: Reply) -> list[str]:
    return [call.id or f"call_{uuid4().hex[:24]}" for call in reply.tool_calls]


def finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def completion(
    reply: Reply, request: RecordedRequest, usage: ScriptedUsage, reasoning: str | None
) -> dict[str, Any]:
    """A `chat.completion` object (the non-streamed reply)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reasoning is not None:
        message[reply.reasoning_field] = reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            _call_json(call, call_id)
            for call, call_id in zip(reply.tool_calls, call_ids(reply), strict=True)
        ]
    return {
        "id": f"chatcmpl-{uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or request.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason(reply),
            }
        ],
        "usage": usage_json(usage),
    }


def _call_json(call: ScriptedCall, call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json},
    }


Split = Callable[[str], Sequence[str]]
"""Cuts a streamed text into the pieces sent one a chunk (a paced twin: its tokens)."""


def chunks(
    reply: Reply,
    request: RecordedRequest,
    usage: ScriptedUsage,
    reasoning: str | None,
    *,
    split: Split | None = None,
) -> list[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed reply, in order, without `[DONE]`.
    In thinking mode the first chunk carries an empty `reasoning_content`, as DeepSeek's do.
    Each scripted piece of reasoning or text is one chunk, or with `split` one chunk a piece
    of what `split` cuts it into (a paced twin streams one token a chunk, as DeepSeek does)."""
    include_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
    envelope: dict[str, Any] = {
        "id": f"chatcmpl-{uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": reply.model or request.model,
        "system_fingerprint": FINGERPRINT,
    }
    if include_usage:
        envelope["usage"] = None  # as OpenAI does: null on every chunk but the last

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**envelope, "choices": [choice]}

    field = reply.reasoning_field
    first: dict[str, Any] = {"role": "assistant", "content": ""}
    if reasoning is not None:
        first = {"role": "assistant", "content": None, field: ""}
    out = [chunk(first)]
    pieces = (reply.reasoning or (reasoning,)) if reasoning else ()
    out += [chunk({"content": None, field: p}) for piece in pieces for p in _cut(piece, split)]
    out += [chunk({"content": p}) for piece in reply.content for p in _cut(piece, split)]
    out += [chunk({"tool_calls": [delta]}) for delta in _tool_call_deltas(reply)]
    out.append(chunk({}, finish_reason(reply)))
    if include_usage:
        out.append({**envelope, "choices": [], "usage": usage_json(usage)})
    return out


def _cut(piece: str, split: Split | None) -> Sequence[str]:
    if split is None:
        return (piece,)
    return split(piece) or (piece,)


def chunk_text(chunk: dict[str, Any]) -> str:
    """The text a chunk streams: its content, reasoning or tool-call arguments ("" for none)."""
    parts: list[str] = []
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        parts += [v for k, v in delta.items() if k != "role" and isinstance(v, str)]
        for call in delta.get("tool_calls") or ():
            parts.append((call.get("function") or {}).get("arguments") or "")
    return "".join(parts)


def _tool_call_deltas(reply: Reply) -> list[dict[str, Any]]:
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, call_ids(reply), strict=True)):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        tail = [{"index": index, "function": {"arguments": f}} for f in call.fragments()]
        per_call.append([head, *tail])
    if not reply.interleave_calls:
        return [delta for deltas in per_call for delta in deltas]
    rounds = zip_longest(*per_call)
    return [delta for group in rounds for delta in group if delta is not None]


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event line pair."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {payload}\n\n".encode()


def error_body(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}
