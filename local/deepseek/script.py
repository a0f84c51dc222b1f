"""What the fake model says: scripted replies, faults, and the builders that make them.

reply("Hello", " world")                       two content deltas, finish "stop"
reply("Checking.", tool_call("search", q="x"))  text, then a tool call in 3 argument pieces
reply(reasoning="Think...", content=...)       `reasoning_content` first (in thinking mode)
reply("x").without_reasoning()                 thinking mode, but no `reasoning_content` at all
reply("x").with_empty_reasoning()              thinking mode, `reasoning_content: ""`
reply("x").reasoning_named("reasoning")        the field other hosts use (OpenRouter, vLLM)
raw_tool_call("f", '{"a": ')                    arguments that never become valid JSON
error(500) · rate_limited(retry_after=7)       HTTP errors (DeepSeek's error body)
insufficient_balance() · invalid_key("sk-…")   DeepSeek's 402 and 401, word for word
reply("x").truncated(after=2)                  stream cut after 2 chunks (no finish, no [DONE])
reply("x").malformed(after=1)                  a `data:` line that is not JSON
reply("x").stalled(after=0)                    hang until `release()` (or `hold` seconds)
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

SECRET_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "cookie", "openai-organization"}
)


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call the fake model makes; `arguments_json` is streamed in `pieces` fragments."""

    name: str
    arguments_json: str
    id: str | None = None
    pieces: int = 3

    def with_id(self, call_id: str) -> ScriptedCall:
        return replace(self, id=call_id)

    def in_pieces(self, pieces: int) -> ScriptedCall:
        return replace(self, pieces=max(pieces, 1))

    def fragments(self) -> list[str]:
        text, n = self.arguments_json, max(self.pieces, 1)
        size = -(-len(text) // n) or 1
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True, slots=True)
class ScriptedUsage:
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Cut:
    """A fault inside a 200 reply, after `after` chunks (streaming) or mid-body (plain)."""

    how: Literal["truncate", "malformed", "stall"]
    after: int = 0
    hold: float | None = None
    """Stall only: give up waiting for `release()` after this many seconds (None = wait)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One successful (HTTP 200) reply."""

    content: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()
    tool_calls: tuple[ScriptedCall, ...] = ()
    finish_reason: str | None = None
    """Default: "tool_calls" when there are calls, else "stop"."""
    usage: ScriptedUsage | None = None
    """Default: estimated from the request and reply sizes (about 4 characters a token)."""
    model: str | None = None
    """Default: the requested model."""
    interleave_calls: bool = False
    """Stream the argument fragments of parallel calls interleaved (index tells them apart)."""
    cut: Cut | None = None
    reasoning_shown: Literal["auto", "empty", "absent"] = "auto"
    """In thinking mode: "auto" sends `reasoning` (or, when none is scripted, a line of the
    twin's own), "empty" an empty string, "absent" no field. Never sent when not thinking."""
    reasoning_field: str = "reasoning_content"
    """The field it is sent in (DeepSeek's; OpenRouter and newer vLLM say `reasoning`)."""

    def truncated(self, after: int) -> Reply:
        return replace(self, cut=Cut("truncate", after))

    def malformed(self, after: int) -> Reply:
        return replace(self, cut=Cut("malformed", after))

    def stalled(self, after: int = 0, *, hold: float | None = None) -> Reply:
        return replace(self, cut=Cut("stall", after, hold))

    def without_reasoning(self) -> Reply:
        return replace(self, reasoning=(), reasoning_shown="absent")

    def with_empty_reasoning(self) -> Reply:
        return replace(self, reasoning=(), reasoning_shown="empty")

    def reasoning_named(self, field: str) -> Reply:
        return replace(self, reasoning_field=field)

    @property
    def text(self) -> str:
        return "".join(self.content)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error with DeepSeek's (OpenAI's) error body."""

    status: int
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    type: str = "server_error"
    code: str | None = None
    rule: str | None = None
    """The contract rule that refused the request (`local.deepseek.contract.RULES`), if any."""


ScriptItem = Reply | ErrorReply


def reply(
    *parts: str | ScriptedCall,
    content: str | Sequence[str] = (),
    reasoning: str | Sequence[str] = (),
    finish_reason: str | None = None,
    usage: ScriptedUsage | None = None,
    model: str | None = None,
    interleave_calls: bool = False,
) -> Reply:
    """A reply; each string part is one content delta, each `tool_call(...)` one call."""
    texts = tuple(p for p in parts if isinstance(p, str)) + _pieces(content)
    calls = tuple(p for p in parts if isinstance(p, ScriptedCall))
    return Reply(texts, _pieces(reasoning), calls, finish_reason, usage, model, interleave_calls)


def tool_call(name: str, /, **arguments: Any) -> ScriptedCall:
    """A call with these arguments (JSON-encoded; use `.with_id()` / `.in_pieces()` to tune)."""
    return ScriptedCall(name, json.dumps(arguments))


def raw_tool_call(name: str, arguments_json: str, /) -> ScriptedCall:
    """A call whose argument text is sent exactly as given (e.g. broken JSON)."""
    return ScriptedCall(name, arguments_json)


def usage(prompt: int, completion: int, *, cache_hit: int = 0, reasoning: int = 0) -> ScriptedUsage:
    return ScriptedUsage(prompt, completion, cache_hit, reasoning)


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "unknown_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
"""DeepSeek's `type` per status; its `code` is "invalid_request_error" for all of these."""


def error(
    status: int, message: str | None = None, *, headers: Mapping[str, str] | None = None
) -> ErrorReply:
    """An HTTP error reply with DeepSeek's `{"error": {...}}` body."""
    text = message or f"fake model server: scripted HTTP {status}"
    kind = ERROR_TYPES.get(status, "server_error")
    code = "invalid_request_error" if status in ERROR_TYPES else None
    return ErrorReply(status, text, dict(headers or {}), kind, code)


def rate_limited(retry_after: float | str | None = None) -> ErrorReply:
    """429 as DeepSeek words it (its concurrency limit); `retry_after` is sent as the
    Retry-After header (seconds or an HTTP date), which DeepSeek itself does not send."""
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    text = (
        "Too many requests. Your current concurrency is 26, which exceeds your concurrency "
        "limit of 25 based on your remaining balance. Please top up your balance to restore "
        "your concurrency."
    )
    return error(429, text, headers=headers)


def insufficient_balance() -> ErrorReply:
    """402: the account has no balance left (DeepSeek's error-codes page)."""
    return error(402, "Insufficient Balance")


def invalid_key(key: str | None) -> ErrorReply:
    """401 for a wrong key (shown by its last four characters) or a missing header."""
    if not key:
        return error(401, "Authentication Fails (auth header format should be Bearer sk-...)")
    return error(401, f"Authentication Fails, Your api key: ****{key[-4:]} is invalid")


def _pieces(value: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(value)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request the server received: parsed JSON body and headers (secrets redacted)."""

    method: str
    path: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools")
        if not isinstance(tools, list):
            return []
        return [str(t.get("function", {}).get("name", "")) for t in tools if isinstance(t, dict)]

    @property
    def streaming(self) -> bool:
        return self.body.get("stream") is True


def redact(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: "[redacted]" if k.lower() in SECRET_HEADERS else v for k, v in headers.items()}


Responder = Callable[[RecordedRequest], ScriptItem | None]


class Script:
    """The queue of replies and the request log, shared between a test and the server thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ScriptItem] = deque()
        self._responder: Responder | None = None
        self._requests: list[RecordedRequest] = []

    def add(self, *items: ScriptItem) -> None:
        with self._lock:
            self._queue.extend(items)

    def respond_with(self, responder: Responder | None) -> None:
        with self._lock:
            self._responder = responder

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def take(self, request: RecordedRequest) -> ScriptItem | None:
        """Record the request and pick its reply: queue first, then the responder."""
        with self._lock:
            self._requests.append(request)
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        return responder(request) if responder else None

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._responder = None
            self._requests.clear()
