"""The fake model as an ASGI app speaking the OpenAI chat-completions wire protocol."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from local.deepseek import contract, wire
from local.deepseek.cache import PrefixCache
from local.deepseek.contract import DEEPSEEK, ModelProfile
from local.deepseek.demo import DEMO_MODELS, demo_reply
from local.deepseek.pace import AT_ONCE, Pace
from local.deepseek.script import (
    Cut,
    ErrorReply,
    RecordedRequest,
    Reply,
    Responder,
    Script,
    ScriptedUsage,
    ScriptItem,
    invalid_key,
    redact,
)
from shared.llm.tokens import DeepSeekTokenizer, count_prompt

DEEPSEEK_MODELS = ("deepseek-flash", "deepseek-v4-pro", "deepseek-v4-flash")
"""The model names DeepSeek's API serves today (`deepseek-v4-flash` is the legacy Flash name,
still accepted; it is not among the names its refusal lists)."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One answered request and the usage the fake reported for it (None for an error)."""

    request: RecordedRequest
    usage: ScriptedUsage | None
    refused: ErrorReply | None = None
    """DeepSeek's refusal, when the request broke its contract."""


class FakeModel:
    """DeepSeek's local twin: a scriptable OpenAI-compatible model held to DeepSeek's request
    contract. Mount `app`, or run it with `FakeModelServer`.

    Each chat-completions request is recorded and checked against DeepSeek's documented rules
    (`contract`): one it breaks gets DeepSeek's status and error body, before any script is
    used. Otherwise it is answered by the next scripted item, else by the `respond_with`
    function, else by the offline demo model. Every name served — DeepSeek's, the demo's and
    `models` — behaves as a DeepSeek V4 model (thinking unless told not to; a `models` mapping
    may give a name another `ModelProfile`): a thinking reply carries `reasoning_content`. Its
    `usage` counts tokens with DeepSeek's tokenizer and reports disk-cache hits as DeepSeek does
    (`cache`). With `api_key` set it answers any other key with DeepSeek's 401. With a `pace`
    it streams as a real model does, one token a chunk at the model's speed (`local.deepseek.
    pace`; the local stack uses DeepSeek's own figure); without one, at once.
    Scripting is thread-safe: a test may script a server running in another thread.
    """

    def __init__(
        self,
        *,
        models: Iterable[str] | Mapping[str, ModelProfile] = (),
        tokenizer: DeepSeekTokenizer | None = None,
        latency: float = 0.0,
        api_key: str | None = None,
        pace: Pace = AT_ONCE,
    ) -> None:
        extra = dict(models) if isinstance(models, Mapping) else dict.fromkeys(models, DEEPSEEK)
        self.profiles: dict[str, ModelProfile] = {
            **dict.fromkeys((*DEEPSEEK_MODELS, *DEMO_MODELS), DEEPSEEK),
            **extra,
        }
        """The model names served, and how each behaves; any other gets DeepSeek's 400."""
        self.api_key = api_key
        self.latency = latency
        """Seconds each answer waits before its first byte, as a real model's would (the local
        stack paces the demo model so a person can watch a turn unfold; tests use 0)."""
        self.pace = pace
        """How fast a streamed reply comes, token by token (tests: at once)."""
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

    @property
    def models(self) -> frozenset[str]:
        """The model names served."""
        return frozenset(self.profiles)

    def listed_models(self) -> list[str]:
        """The names DeepSeek's refusal lists: its current two, then the twin's own."""
        own = sorted(n for n in self.profiles if n not in DEEPSEEK_MODELS)
        return ["deepseek-flash", "deepseek-v4-pro", *own]

    async def _models(self, request: Request) -> Response:
        if (refused := self._unauthorized(request)) is not None:
            return _error(refused)
        model = {"object": "model", "created": 0, "owned_by": "parley"}
        data = [{"id": name, **model} for name in self.listed_models()]
        return JSONResponse({"object": "list", "data": data})

    def _unauthorized(self, request: Request) -> ErrorReply | None:
        """DeepSeek's 401 for a missing or wrong key (only when this twin has a key)."""
        if self.api_key is None:
            return None
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key:
            return invalid_key(None)
        return None if key == self.api_key else invalid_key(key)

    async def _chat_completions(self, request: Request) -> Response:
        if (refused := self._unauthorized(request)) is not None:
            return _error(refused)
        try:
            raw = await request.body()
            body = json.loads(raw)
        except ValueError as exc:
            return _error(contract.json_error(exc))
        if not isinstance(body, dict):
            return _error(contract.deserialize_error("", "invalid type: expected struct"))
        recorded = RecordedRequest(
            request.method, request.url.path, body, redact(dict(request.headers))
        )
        if self.latency:
            await asyncio.sleep(self.latency)
        refused = await self._refusal(recorded, size=len(raw))
        if refused is not None:
            self._script.record(recorded)
            self._log(Exchange(recorded, None, refused))
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
        reasoning = wire.reasoning_of(item, thinking=self._thinking(recorded))
        usage = await asyncio.to_thread(self._usage, item, recorded, reasoning)
        self._log(Exchange(recorded, usage))
        if stall is not None and item.cut is not None:
            await self._wait(stall, item.cut)
        if recorded.streaming:
            return StreamingResponse(
                self._events(item, recorded, usage, reasoning), media_type="text/event-stream"
            )
        return self._plain(item, recorded, usage, reasoning)

    def _thinking(self, recorded: RecordedRequest) -> bool:
        return contract.thinking_on(recorded.body, self.profiles[recorded.model])

    async def _refusal(self, recorded: RecordedRequest, *, size: int) -> ErrorReply | None:
        """What DeepSeek refuses before any reply (`contract`), the context length last: it
        needs the prompt's tokens."""
        profile = self.profiles.get(recorded.model)
        refused = contract.check(recorded.body, profile, self.listed_models())
        if refused is not None or profile is None:
            return refused
        if size < contract.CONTEXT_LENGTH // 2:
            return None  # bytes bound tokens: far below the context, no need to count
        prompt = await asyncio.to_thread(self._prompt_tokens, recorded, profile)
        found = contract.context_length(recorded.body, profile, prompt)
        return None if found is None else replace(found, rule="context-length")

    def _prompt(
        self, recorded: RecordedRequest, profile: ModelProfile
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The messages and tools as DeepSeek concatenates them: earlier turns' reasoning only
        where it is kept (`contract.reasoning_kept`)."""
        tools = [t for t in recorded.body.get("tools") or () if isinstance(t, dict)]
        kept = contract.reasoning_kept(recorded.body, profile)
        messages = [
            m if keep else {k: v for k, v in m.items() if k != "reasoning_content"}
            for m, keep in zip(recorded.messages, kept, strict=True)
        ]
        return messages, tools

    def _prompt_tokens(self, recorded: RecordedRequest, profile: ModelProfile) -> int:
        messages, tools = self._prompt(recorded, profile)
        return count_prompt(self._tokenizer, messages, tools)

    def _log(self, exchange: Exchange) -> None:
        with self._exchanges_lock:
            self._exchanges.append(exchange)

    def _usage(
        self, item: Reply, recorded: RecordedRequest, reasoning: str | None
    ) -> ScriptedUsage:
        """Tokens as DeepSeek would bill them (unless the script says otherwise)."""
        if item.usage is not None:
            return item.usage
        messages, tools = self._prompt(recorded, self.profiles[recorded.model])
        prompt = count_prompt(self._tokenizer, messages, tools)
        thought = self._tokenizer.count(reasoning or "")
        output = self.cache.message_ids(wire.assistant_message(item, reasoning))
        completion = max(len(output) - 1, 1)  # the role marker is the prompt's
        hit = self.cache.serve(recorded.model, self.cache.prompt_ids(messages, tools), output)
        return ScriptedUsage(prompt, completion, min(hit, prompt), thought)

    def _plain(
        self, item: Reply, recorded: RecordedRequest, usage: ScriptedUsage, reasoning: str | None
    ) -> Response:
        content = json.dumps(wire.completion(item, recorded, usage, reasoning)).encode()
        if item.cut is not None and item.cut.how in ("truncate", "malformed"):
            content = content[: len(content) // 2]
        return Response(content, media_type="application/json")

    async def _events(
        self, item: Reply, recorded: RecordedRequest, usage: ScriptedUsage, reasoning: str | None
    ) -> AsyncIterator[bytes]:
        cut, pace = item.cut, self.pace
        split = self._tokenizer.pieces if pace.paced else None
        started, tokens = pace.start(), 0
        for sent, chunk in enumerate(wire.chunks(item, recorded, usage, reasoning, split=split)):
            if cut is not None and sent == cut.after and (sent or cut.how != "stall"):
                if cut.how == "truncate":
                    return
                if cut.how == "malformed":
                    yield wire.sse('{"id": "chatcmpl-broken", "choices": [{"delta": ')
                    return
                await self._stall(cut)
            if pace.paced:  # a chunk leaves once the model has had the time to write it
                tokens += self._tokenizer.count(wire.chunk_text(chunk))
                await pace.wait(started, tokens)
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
