"""The fake model as an ASGI app speaking the OpenAI chat-completions wire protocol."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from shared.llm.fake_server import wire
from shared.llm.fake_server.demo import DEMO_MODEL, demo_reply
from shared.llm.fake_server.rules import history_error
from shared.llm.fake_server.script import (
    Cut,
    ErrorReply,
    RecordedRequest,
    Reply,
    Responder,
    Script,
    ScriptItem,
    redact,
)


class FakeModel:
    """A scriptable OpenAI-compatible model. Mount `app`, or run it with `FakeModelServer`.

    Each chat-completions request is recorded, then answered by the next scripted item, else
    by the `respond_with` function, else by the offline demo model. A history that pairs tool
    calls and results wrongly gets the 400 OpenAI and DeepSeek give (the script is untouched).
    Scripting is thread-safe: a test may script a server running in another thread.
    """

    def __init__(self) -> None:
        self._script = Script()
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
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return self._script.pending

    def reset(self) -> None:
        """Forget the script and the request log, and release any stalled request."""
        self._script.reset()
        self.release()

    def release(self) -> None:
        """Let every stalled request go on (callable from any thread)."""
        with self._stalls_lock:
            stalls, self._stalls = self._stalls, set()
        for loop, event in stalls:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    async def _stall(self, cut: Cut) -> None:
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._stalls_lock:
            self._stalls.add(entry)
        try:
            await asyncio.wait_for(event.wait(), cut.hold)
        except TimeoutError:
            pass
        finally:
            with self._stalls_lock:
                self._stalls.discard(entry)

    async def _models(self, request: Request) -> Response:
        model = {"object": "model", "created": 0, "owned_by": "parley"}
        return JSONResponse({"object": "list", "data": [{"id": DEMO_MODEL, **model}]})

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
        if problem := history_error(recorded.messages):
            self._script.record(recorded)
            return _error(ErrorReply(400, problem, type="invalid_request_error"))
        item = self._script.take(recorded) or demo_reply(recorded)
        if isinstance(item, ErrorReply):
            return _error(item)
        if item.cut is not None and item.cut.how == "stall" and item.cut.after == 0:
            await self._stall(item.cut)
        if recorded.streaming:
            return StreamingResponse(self._events(item, recorded), media_type="text/event-stream")
        return self._plain(item, recorded)

    def _plain(self, item: Reply, recorded: RecordedRequest) -> Response:
        content = json.dumps(wire.completion(item, recorded)).encode()
        if item.cut is not None and item.cut.how in ("truncate", "malformed"):
            content = content[: len(content) // 2]
        return Response(content, media_type="application/json")

    async def _events(self, item: Reply, recorded: RecordedRequest) -> AsyncIterator[bytes]:
        cut = item.cut
        for sent, chunk in enumerate(wire.chunks(item, recorded)):
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
    body: dict[str, Any] = wire.error_body(item.message, item.type)
    return JSONResponse(body, status_code=item.status, headers=dict(item.headers))
