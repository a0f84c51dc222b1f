"""One websocket: reading frames, routing them to channels, writing through an outbox.

Frames for one topic are handled strictly in order (a join, with its database checks, completes
before the next frame for that topic), like a Phoenix channel process; different topics proceed
independently and heartbeats are answered at once, so a slow join never delays a heartbeat
reply (realtime-js drops the socket when one is late). Writes go through a queue drained by one
task, so fan-out never waits on a slow client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from starlette.websockets import WebSocket

from local.realtime.frames import Frame, JsonObject, MalformedFrame, Serializer
from local.realtime.joins import join

if TYPE_CHECKING:
    from local.realtime.channel import Channel
    from local.realtime.engine import Realtime

log = logging.getLogger(__name__)


class Connection:
    """A connected client socket and its channels."""

    def __init__(
        self, engine: Realtime, websocket: WebSocket, serializer: Serializer, *, token: str
    ) -> None:
        self.engine = engine
        self.serializer = serializer
        self.token = token
        """The connect token (apikey, already verified), used by joins without access_token."""
        self.channels: dict[str, Channel] = {}
        self.joining: set[str] = set()
        """Topics whose join is being checked."""
        self.headers: dict[str, str] = {
            name: value for name, value in websocket.headers.items() if name.startswith("x-")
        }
        """The upgrade request's `x-*` headers: `request.headers` in policy checks, as hosted."""
        self._websocket = websocket
        self._outbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._topic_locks: dict[str, asyncio.Lock] = {}

    async def run(self) -> None:
        """Serve the socket until the client leaves, idles out or the server stops."""
        writer = asyncio.create_task(self._write(), name="realtime-writer")
        try:
            await self._read()
        finally:
            for channel in list(self.channels.values()):
                channel.terminate()
            self.engine.limits.users.discard(self)
            tasks = (writer, *self._tasks)
            for task in tasks:
                task.cancel()
            # A writer that failed because the peer vanished has nothing left to report.
            await asyncio.gather(*tasks, return_exceptions=True)

    def send(self, data: str | bytes) -> None:
        self._outbox.put_nowait(data)

    def disconnect(self) -> None:
        """Close the socket once everything queued before has been written."""
        self._outbox.put_nowait(None)

    def send_frame(self, frame: Frame) -> None:
        data = self.serializer.encode(frame)
        if data is not None:
            self.send(data)

    def reply(self, frame: Frame, status: str, response: JsonObject) -> None:
        """Answer `frame` on its own topic, echoing its ref and join_ref."""
        payload = {"status": status, "response": response}
        self.send_frame(Frame(frame.topic, "phx_reply", payload, frame.ref, frame.join_ref))

    def adopt(self, channel: Channel) -> None:
        self.channels[channel.topic] = channel

    def forget(self, channel: Channel) -> None:
        if self.channels.get(channel.topic) is channel:
            del self.channels[channel.topic]

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run a background job tied to this socket (cancelled when it closes)."""
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _in_order(self, frame: Frame) -> None:
        # asyncio.Lock wakes waiters first-come first-served, and tasks start in creation order,
        # so frames of one topic are handled in the order they arrived.
        lock = self._topic_locks.setdefault(frame.topic, asyncio.Lock())
        async with lock:
            try:
                await self.handle(frame)
            except Exception:  # a bug handling one frame must not take the socket down
                log.exception("realtime: failed to handle %r on %s", frame.event, frame.topic)

    async def handle(self, frame: Frame) -> None:
        """Route one decoded frame."""
        if frame.topic == "phoenix" and frame.event == "heartbeat":
            self.reply(frame, "ok", {})
        elif frame.event == "phx_join":
            await join(self, frame)
        elif (channel := self._channel_for(frame)) is not None:
            await channel.handle(frame)
        elif frame.event == "phx_leave":
            self.reply(frame, "ok", {})
        else:
            self.reply(frame, "error", {"reason": "unmatched topic"})

    def _channel_for(self, frame: Frame) -> Channel | None:
        channel = self.channels.get(frame.topic)
        if channel is None or frame.join_ref not in (None, channel.join_ref):
            return None
        return channel

    async def _read(self) -> None:
        idle = self.engine.config.idle_timeout
        while True:
            try:
                message = await asyncio.wait_for(self._websocket.receive(), timeout=idle)
            except TimeoutError:
                log.info("realtime: closing a socket idle for %s s", idle)
                await self._websocket.close(code=1000)
                return
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text")
            try:
                frame = self.serializer.decode(data if data is not None else message["bytes"])
            except MalformedFrame as exc:
                log.warning("realtime: MalformedWebSocketMessage: %s", exc)
                continue
            if frame.topic == "phoenix":
                await self.handle(frame)
            else:
                self.spawn(self._in_order(frame))

    async def _write(self) -> None:
        while True:
            data = await self._outbox.get()
            if data is None:
                await self._websocket.close(code=1000)
                return
            if isinstance(data, str):
                await self._websocket.send_text(data)
            else:
                await self._websocket.send_bytes(data)
