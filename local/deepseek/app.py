"""The fake model as an ASGI app speaking the OpenAI chat-completions wire protocol."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from local.deepseek import wire
from local.deepseek.cache import PrefixCache
from local.deepseek.demo import DEMO_MODELS, demo_reply
from local.deepseek.rules import history_error
from local.deepseek.script import (
    Cut,
    ErrorReply,
    RecordedRequest,
    Reply,
    Responder,
    Script,
    ScriptedUsage,
    ScriptItem,
    redact,
)
from shared.llm.tokens import DeepSeekTokenizer, count_prompt

DEEPSEEK_MODELS = ("deepseek-v4-pro", "deepseek-flash", "deepseek-v4-flash")
"""The model names DeepSeek's API serves today (`deepseek-v4-flash` is the legacy Flash name)."""
MODEL_NOT_EXIST = ErrorReply(400, "Model Not Exist", {}, "invalid_request_error",
                             "invalid_request_error")  # fmt: skip
"""DeepSeek's answer to a model name it does not serve (retired names included)."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One answered request and the usage the fake reported for it (None for an error)."""

    request: RecordedRequest
    usage: ScriptedUsage | None


class FakeModel:
    """A scriptable OpenAI-compatible model. Mount `app`, or run it with `FakeModelServer`.

    Each chat-completions request is recorded, then answered by the next scripted item, else
    by the `respond_with` function, else by the offline demo model. Like DeepSeek, it answers a
    model name it does not serve — DeepSeek's current names, the demo's and `models` — with
    HTTP 400 "Model Not Exist", and a history that pairs tool calls and results wrongly with
    the 400 OpenAI and DeepSeek give (the script is untouched either way). Its `usage` counts
    tokens with DeepSeek's tokenizer and reports disk-cache hits as DeepSeek does (`cache`).
    Scripting is thread-safe: a test may script a server running in another thread.
    """

    def __init__(
        self,
        *,
        models: Iterable[str] = (),
        tokenizer: DeepSeekTokenizer | None = None,
        latency: float = 0.0,
    ) -> None:
        self.models = frozenset((*DEEPSEEK_MODELS, *DEMO_MODELS, *models))
        """The model names served; any other gets DeepSeek's 400."""
        self.latency = latency
        """Seconds each answer waits before its first byte, as a real model's would (the local
        stack paces the demo model so a person can watch a turn unfold; tests use 0)."""
        self._script = Script()
        self._tokenizer = tokenizer or DeepSeekTokenizer()
        self.cache = PrefixCache(self._tokenizer)
        self._exchanges: list[Exchange] = []
        self._exchanges_lock = threading.Lock()
        self._stalls_lock = threading.Lock()
        self._stalls: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        routes = [
            Route(path, self._chat_completions, methods=["POST"])
            for path in ("/v1/chat/completions", "/chat/completions")
        ]
        routes += [Route(path, self._models, methods=["GET"]) for path in ("/v1/models", "/models")]
        self.app = Starlette(routes=routes)

    def script(self, *items: ScriptItem) -> None:
        """Queue replies, one per coming request, in order."""
        self._script.add(*items)

    def respond_with(self, responder: Responder | None) -> None:
        """Answer requests the queue does not cover with `responder(request)` (None: the demo)."""
        self._script.respond_with(responder)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat-completions request received since the last `reset()`."""
        return self._script.requests

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request answered since the last `reset()`, with the usage reported for it."""
        with self._exchanges_lock:
            return list(self._exchanges)

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return self._script.pending

    def reset(self) -> None:
        """Forget the script, the request log and the cache; release any stalled request."""
        self._script.reset()
        self.cache.reset()
        with self._exchanges_lock:
            self._exchanges.clear()
        self.release()

    def release(self) -> None:
        """Let every stalled request go on (callable from any thread)."""
        with self._stalls_lock:
            stalls, self._stalls = self._stalls, set()
        for loop, event in stalls:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    async def _stall(self, cut: Cut) -> None:
        await self._wait(self._hold_here(), cut)

    def _hold_here(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Event]:
        """A stall, registered for `release()`."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._stalls_lock:
            self._stalls.add(entry)
        return entry

    async def _wait(self, entry: tuple[asyncio.AbstractEventLoop, asyncio.Event], cut: Cut) -> None:
        try:
            await asyncio.wait_for(entry[1].wait(), cut.hold)
        except TimeoutError:
            pass
        finally:
            with self._stalls_lock:
                self._stalls.discard(entry)

    async def _models(self, request: Request) -> Response:
        model = {"object": "model", "created": 0, "owned_by": "parley"}
        data = [{"id": name, **model} for name in sorted(self.models)]
        return JSONResponse({"object": "list", "data": data})

    async def _chat_completions(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(ErrorReply(400, "request body is not JSON", type="invalid_request_error"))
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(
                ErrorReply(400, "`messages` must be a list", type="invalid_request_error")
            )
        recorded = RecordedRequest(
            request.method, request.url.path, body, redact(dict(request.headers))
        )
        if self.latency:
            await asyncio.sleep(self.latency)
        refused = self._refusal(recorded)
        if refused is not None:
            self._script.record(recorded)
            self._log(Exchange(recorded, None))
            return _error(refused)
        item = self._script.take(recorded) or demo_reply(recorded)
        if isinstance(item, ErrorReply):
            self._log(Exchange(recorded, None))
            return _error(item)
        stall = None
        if item.cut is not None and item.cut.how == "stall" and item.cut.after == 0:
            # Registered as the reply is taken, before anything is awaited: a `release()`
            # from whoever saw the request arrive cannot come before it and be lost.
            stall = self._hold_here()
        usage = await asyncio.to_thread(self._usage, item, recorded)
        self._log(Exchange(recorded, usage))
        if stall is not None and item.cut is not None:
            await self._wait(stall, item.cut)
        if recorded.streaming:
            return StreamingResponse(
                self._events(item, recorded, usage), media_type="text/event-stream"
            )
        return self._plain(item, recorded, usage)

    def _refusal(self, recorded: RecordedRequest) -> ErrorReply | None:
        """What DeepSeek refuses before any reply: an unknown model, a broken history."""
        if recorded.model not in self.models:
            return MODEL_NOT_EXIST
        if problem := history_error(recorded.messages):
            return ErrorReply(400, problem, type="invalid_request_error")
        return None

    def _log(self, exchange: Exchange) -> None:
        with self._exchanges_lock:
            self._exchanges.append(exchange)

    def _usage(self, item: Reply, recorded: RecordedRequest) -> ScriptedUsage:
        """Tokens as DeepSeek would bill them (unless the script says otherwise)."""
        if item.usage is not None:
            return item.usage
        tools = [t for t in recorded.body.get("tools") or () if isinstance(t, dict)]
        prompt = count_prompt(self._tokenizer, recorded.messages, tools)
        reasoning = self._tokenizer.count("".join(item.reasoning))
        output = self.cache.message_ids(wire.assistant_message(item))
        completion = max(len(output) - 1, 1)  # the role marker is the prompt's
        hit = self.cache.serve(
            recorded.model, self.cache.prompt_ids(recorded.messages, tools), output
        )
        return ScriptedUsage(prompt, completion, min(hit, prompt), reasoning)

    def _plain(self, item: Reply, recorded: RecordedRequest, usage: ScriptedUsage) -> Response:
        content = json.dumps(wire.completion(item, recorded, usage)).encode()
        if item.cut is not None and item.cut.how in ("truncate", "malformed"):
            content = content[: len(content) // 2]
        return Response(content, media_type="application/json")

    async def _events(
        self, item: Reply, recorded: RecordedRequest, usage: ScriptedUsage
    ) -> AsyncIterator[bytes]:
        cut = item.cut
        for sent, chunk in enumerate(wire.chunks(item, recorded, usage)):
            if cut is not None and sent == cut.after and (sent or cut.how != "stall"):
                if cut.how == "truncate":
                    return
                if cut.how == "malformed":
                    yield wire.sse('{"id": "chatcmpl-broken", "choices": [{"delta": ')
                    return
                await self._stall(cut)
            yield wire.sse(chunk)
        yield wire.sse("[DONE]")


def _error(item: ErrorReply) -> Response:
    body: dict[str, Any] = wire.error_body(item.message, item.type, item.code)
    # ASCII JSON, as providers send it: a NUL or a lone surrogate travels as a \u escape.
    return Response(
        json.dumps(body),
        status_code=item.status,
        headers=dict(item.headers),
        media_type="application/json",
    )
