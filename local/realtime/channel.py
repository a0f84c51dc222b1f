"""One joined channel on one socket: broadcast, presence, token refresh, leave.

Mirrors `RealtimeChannel` of Supabase Realtime (lib/realtime_web/channels/realtime_channel.ex
and its broadcast and presence handlers): what it replies, what it pushes, and when it shuts a
channel down (`system` error, then `phx_close`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from local.realtime.auth import Claims, TokenRejected
from local.realtime.frames import (
    Frame,
    JsonObject,
    Payload,
    RawJson,
    Ref,
    Serializer,
    UserBroadcast,
    dumps,
)
from local.realtime.hub import tenant_topic
from local.realtime.join_request import JoinRequest
from local.realtime.policies import Access, PolicyError, read_access, write_access

if TYPE_CHECKING:
    from local.realtime.connection import Connection

log = logging.getLogger(__name__)


class AccessLost(Exception):
    """A refreshed token may no longer read the private channel."""


class Channel:
    """A joined `realtime:<subtopic>` on one connection."""

    def __init__(
        self,
        connection: Connection,
        frame: Frame,
        request: JoinRequest,
        *,
        claims: Claims,
        access_token: str,
        access: Access | None,
        binding_ids: list[int],
    ) -> None:
        self.connection = connection
        self.engine = connection.engine
        self._topic = frame.topic
        self.subtopic = frame.topic.removeprefix("realtime:")
        self.join_ref = frame.join_ref
        self.request = request
        self.claims: Claims = claims
        self.access_token = access_token
        self.access = access
        """Read access on a private channel; None on a public one."""
        self.binding_ids = binding_ids
        self.subscription_error: str | None = None
        """Why the postgres_changes bindings could not be subscribed, if they could not."""
        self.tenant_topic = tenant_topic(self.subtopic, private=request.private)
        self.replayed: frozenset[str] = frozenset()
        """Ids of the stored messages replayed on join: not delivered a second time."""
        self._held: list[tuple[str | bytes, str, str | None]] | None = None
        self._presence_calls = self.engine.limits.client_presence()
        self._writes: dict[str, bool] = {}
        self._token_timer: asyncio.TimerHandle | None = None
        self._closed = False

    # -- as a hub member and change subscriber ----------------------------------------------

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def serializer(self) -> Serializer:
        return self.connection.serializer

    def accepts(self, event: str, message_id: str | None = None) -> bool:
        if message_id is not None and message_id in self.replayed:
            return False
        if self.access is None:
            return True
        if event == "broadcast":
            return self.access.broadcast
        if event == "presence_diff":
            return self.access.presence
        return True

    def deliver(self, data: str | bytes, event: str, message_id: str | None = None) -> None:
        if self._closed:  # shut down by an earlier message of the same fan-out
            return
        if self._held is not None:
            self._held.append((data, event, message_id))
            return
        self.connection.send(data)
        limits = self.engine.limits
        if event == "presence_diff":
            limits.presence.add()
            return
        limits.events.add()
        if limits.events.triggered:  # hosted: every channel a message reaches checks the rate
            self.shutdown("Too many messages per second")

    def hold(self) -> None:
        """Keep what arrives for the channel until `release` (while its replay is read)."""
        self._held = []

    def release(self) -> None:
        """Deliver what was held, but the messages already replayed."""
        held, self._held = self._held or [], None
        for data, event, message_id in held:
            if message_id is None or message_id not in self.replayed:
                self.deliver(data, event, message_id)

    def deliver_change(self, binding_ids: list[int], change_type: str, data: RawJson) -> None:
        if self.request.new_api:
            payload = RawJson(f'{{"ids":{dumps(binding_ids)},"data":{data.text}}}')
            self.connection.send_frame(Frame(self.topic, "postgres_changes", payload))
        else:  # legacy API: the change type is the event, the data the payload
            self.connection.send_frame(Frame(self.topic, change_type, data))

    # -- frames to the client -------------------------------------------------------------

    def push(self, event: str, payload: Payload) -> None:
        """A channel push: carries the channel's join_ref on V2, no ref."""
        self.connection.send_frame(Frame(self.topic, event, payload, None, self.join_ref))

    def reply(self, ref: Ref, status: str, response: JsonObject) -> None:
        payload = {"status": status, "response": response}
        self.connection.send_frame(Frame(self.topic, "phx_reply", payload, ref, self.join_ref))

    def push_system(self, extension: str, status: str, message: str) -> None:
        self.push(
            "system",
            {
                "channel": self.subtopic,
                "extension": extension,
                "message": message,
                "status": status,
            },
        )

    # -- client events --------------------------------------------------------------------

    async def handle(self, frame: Frame) -> None:
        """Dispatch one client frame addressed to this channel."""
        if frame.event == "phx_leave":
            self.reply(frame.ref, "ok", {})
            self.close()
        elif frame.event == "broadcast":
            await self._broadcast(frame)
        elif frame.event == "presence" and isinstance(frame.payload, dict):
            await self._presence(frame, frame.payload)
        elif frame.event == "access_token" and isinstance(frame.payload, dict):
            await self.refresh_token(frame.payload.get("access_token"))
        else:
            log.info("realtime: ignored %r on %s", frame.event, self.topic)

    async def _broadcast(self, frame: Frame) -> None:
        payload = frame.payload
        if isinstance(payload, RawJson) or not await self._may_write("broadcast"):
            return
        if _size(payload) > self.engine.config.max_payload_bytes:
            if self.request.ack_broadcast:
                self.reply(frame.ref, "error", {"reason": "Payload size exceeded"})
            return
        if isinstance(payload, UserBroadcast):  # the server drops the client's metadata
            payload = UserBroadcast(payload.event, payload.payload, payload.is_json)
        self.engine.limits.events.add()
        exclude = None if self.request.self_broadcast else self
        self.engine.hub.publish(self.tenant_topic, "broadcast", payload, exclude=exclude)
        if self.request.ack_broadcast:
            self.reply(frame.ref, "ok", {})

    async def _presence(self, frame: Frame, payload: JsonObject) -> None:
        event = payload.get("event")
        if not isinstance(event, str):
            self.reply(frame.ref, "ok", {})
            return
        if not self._presence_calls.allow():  # track, untrack or anything else: all count
            self.shutdown("Client presence rate limit exceeded")
            return
        event = event.lower()
        if event == "track":
            await self._track(frame, payload.get("payload", {}))
        elif event == "untrack":
            self._publish_presence(self.engine.presence.untrack(self.tenant_topic, self))
            self.reply(frame.ref, "ok", {})
        else:
            self.reply(frame.ref, "error", {})

    async def _track(self, frame: Frame, payload: Any) -> None:
        if not isinstance(payload, dict):
            self.reply(frame.ref, "error", {"reason": "Presence track payload must be a map"})
            return
        if not await self._may_write("presence"):
            self.reply(frame.ref, "error", {})
            return
        if _size(payload) > self.engine.config.max_payload_bytes:
            self.shutdown("Track message size exceeded")
            return
        key, presence = self.request.presence_key, self.engine.presence
        if presence.changes(self.tenant_topic, self, key, payload):
            if self.engine.limits.presence_exceeded():
                self.shutdown("Too many presence messages per second")
                return
            self.engine.limits.presence.add()
            self._publish_presence(presence.track(self.tenant_topic, self, key, payload))
        self.reply(frame.ref, "ok", {})

    def push_presence_state(self) -> None:
        """The `presence_state` after join, counted like hosted's presence sync."""
        if self.engine.limits.presence_exceeded():
            self.shutdown("Too many presence messages per second")
            return
        self.engine.limits.presence.add()
        self.push("presence_state", self.engine.presence.state(self.tenant_topic))

    def _publish_presence(self, diff: JsonObject | None) -> None:
        if diff is not None:
            self.engine.hub.publish(self.tenant_topic, "presence_diff", diff)

    async def _may_write(self, extension: str) -> bool:
        if not self.request.private:
            return True
        if extension not in self._writes:
            try:
                allowed = await write_access(
                    self.engine.pool,
                    self.subtopic,
                    self.claims,
                    extension,
                    headers=self.connection.headers,
                )
            except PolicyError as exc:
                log.error("realtime: RlsPolicyError on %s: %s", self.topic, exc)
                return False
            self._writes[extension] = allowed
        return self._writes[extension]

    # -- tokens ---------------------------------------------------------------------------

    async def refresh_token(self, token: object) -> None:
        """`access_token`: never answered; a bad token shuts the channel down."""
        if not isinstance(token, str) or token.startswith("sb_") or token == self.access_token:
            return
        self.access_token = token
        try:
            claims = await self.engine.auth.claims(token)
            if self.request.private:
                await self._reauthorize(claims)
        except TokenRejected as exc:
            self.shutdown(exc.message)
            return
        except AccessLost as exc:
            self.shutdown(str(exc))
            return
        self.claims = claims
        self.watch_token()
        if self.binding_ids:
            self.push_system("postgres_changes", "ok", "Subscribed to PostgreSQL")

    async def _reauthorize(self, claims: Claims) -> None:
        try:
            access = await read_access(
                self.engine.pool,
                self.subtopic,
                claims,
                presence=self.request.presence_enabled,
                headers=self.connection.headers,
            )
        except PolicyError:
            access = Access()
        if not (access.broadcast or access.presence):
            raise AccessLost(
                f"You do not have permissions to read from this Channel topic: {self.subtopic}"
            )
        previous = self.access or Access()
        if (previous.broadcast and not access.broadcast) or (
            previous.presence and not access.presence
        ):
            raise AccessLost(
                f"You no longer have permission to read from this Channel topic: {self.subtopic}"
            )
        self.access, self._writes = access, {}

    def watch_token(self) -> None:
        """Re-check the token when it expires, and at least every `token_check_interval`."""
        if self._token_timer is not None:
            self._token_timer.cancel()
        exp = self.claims.get("exp")
        remaining = float(exp) - time.time() if isinstance(exp, int | float) else 0.0
        delay = max(0.0, min(self.engine.config.token_check_interval, remaining))
        loop = asyncio.get_running_loop()
        self._token_timer = loop.call_later(delay, self._check_token_soon)

    def _check_token_soon(self) -> None:
        self.connection.spawn(self._check_token())

    async def _check_token(self) -> None:
        if self._closed:
            return
        try:
            self.claims = await self.engine.auth.claims(self.access_token)
        except TokenRejected as exc:
            self.shutdown(exc.message)
            return
        self.watch_token()

    # -- ending -----------------------------------------------------------------------------

    def shutdown(self, message: str) -> None:
        """Tell the client why (`system` error), then close the channel."""
        self.push_system("system", "error", message)
        self.close()

    def close(self) -> None:
        """`phx_close` (ref = join_ref), then forget the channel."""
        if self._closed:
            return
        self.connection.send_frame(Frame(self.topic, "phx_close", {}, self.join_ref, self.join_ref))
        self.terminate()

    def terminate(self) -> None:
        """Forget the channel without telling the client (its socket is gone)."""
        if self._closed:
            return
        self._closed = True
        if self._token_timer is not None:
            self._token_timer.cancel()
        self.connection.forget(self)
        self.engine.router.unsubscribe(self)
        self.engine.hub.remove(self.tenant_topic, self)
        self._publish_presence(self.engine.presence.untrack(self.tenant_topic, self))


def _size(payload: Mapping[str, Any] | UserBroadcast) -> int:
    if isinstance(payload, UserBroadcast):
        return len(payload.payload)
    return len(dumps(payload).encode())
