"""`phx_join`: the checks of `RealtimeChannel.join/3`, in the hosted server's order and words.

Topic → payload → token → private read policies → replay → postgres_changes bindings. Errors
are answered after `join_error_delay` (5 s hosted). Unlike hosted, the bindings are checked and
active *before* the OK reply, so a change committed after SUBSCRIBED is never missed; the
`system` "Subscribed to PostgreSQL" message still follows the reply.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from local.realtime.auth import TokenRejected
from local.realtime.bindings import binding_ids
from local.realtime.changes.router import SubscriptionFailed
from local.realtime.channel import Channel
from local.realtime.frames import Frame
from local.realtime.join_request import JoinRequest, parse_join
from local.realtime.policies import Access, PolicyError, read_access

if TYPE_CHECKING:
    from local.realtime.connection import Connection


class JoinRefused(Exception):
    """A join the server answers with `{"status": "error", "response": {"reason": …}}`."""


async def join(connection: Connection, frame: Frame) -> None:
    """Handle one `phx_join` frame: reply, and on success start the channel."""
    previous = connection.channels.get(frame.topic)
    if previous is not None:  # a second join replaces the channel
        previous.close()
    if not frame.topic.startswith("realtime:"):
        connection.reply(frame, "error", {"reason": "unmatched topic"})
        return
    try:
        channel = await _open(connection, frame)
    except JoinRefused as exc:
        await asyncio.sleep(connection.engine.config.join_error_delay)
        connection.reply(frame, "error", {"reason": str(exc)})
        return
    _announce(channel, frame)


async def _open(connection: Connection, frame: Frame) -> Channel:
    engine = connection.engine
    subtopic = frame.topic.removeprefix("realtime:")
    if not subtopic:
        raise JoinRefused("TopicNameRequired: You must provide a topic name")
    if not isinstance(frame.payload, dict):
        raise JoinRefused("Unknown Error on Channel")
    request = parse_join(frame.payload, subtopic)
    token = _token(request, connection.token)
    try:
        claims = await engine.auth.claims(token)
    except TokenRejected as exc:
        raise JoinRefused(exc.join_reason) from None
    access = await _read_access(connection, subtopic, claims, request) if request.private else None
    if request.wants_replay and not request.private:
        raise JoinRefused("UnableToReplayMessages: Replay is not allowed for public channels")
    ids = binding_ids(request.postgres_changes)
    channel = Channel(
        connection, frame, request,
        claims=claims, access_token=token, access=access, binding_ids=ids,
    )  # fmt: skip
    if request.postgres_changes:
        try:
            await engine.router.subscribe(
                channel, list(zip(ids, request.postgres_changes, strict=True))
            )
        except SubscriptionFailed as exc:
            channel.subscription_error = str(exc)
    return channel


def _token(request: JoinRequest, connect_token: str) -> str:
    token = request.access_token
    if isinstance(token, str) and token and not token.startswith("sb_"):
        return token
    return connect_token


async def _read_access(
    connection: Connection, subtopic: str, claims: dict[str, object], request: JoinRequest
) -> Access:
    try:
        access = await read_access(
            connection.engine.pool, subtopic, claims, presence=request.presence_enabled
        )
    except PolicyError:
        access = Access()
    if not (access.broadcast or access.presence):
        raise JoinRefused(
            "Unauthorized: You do not have permissions to read from this Channel topic: " + subtopic
        )
    return access


def _announce(channel: Channel, frame: Frame) -> None:
    connection, engine, request = channel.connection, channel.engine, channel.request
    connection.adopt(channel)
    engine.hub.add(channel.tenant_topic, channel)
    echoed = [
        {**binding, "id": binding_id}
        for binding, binding_id in zip(request.postgres_changes, channel.binding_ids, strict=True)
    ]
    channel.reply(frame.ref, "ok", {"postgres_changes": echoed})
    channel.watch_token()
    if request.presence_enabled and channel.accepts("presence_diff"):
        channel.push("presence_state", engine.presence.state(channel.tenant_topic))
    if request.postgres_changes:
        error = channel.subscription_error
        channel.push_system(
            "postgres_changes", "error" if error else "ok", error or "Subscribed to PostgreSQL"
        )
