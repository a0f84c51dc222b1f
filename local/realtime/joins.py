"""`phx_join`: the checks of `RealtimeChannel.join/3`, in the hosted server's order and words.

Topic → payload → limits (connected users, joins per second, channels per socket) → token →
private read policies → replay → postgres_changes bindings. Errors are answered after
`join_error_delay` (5 s hosted); a join refused by the joins-per-second limit then ends the
socket, as hosted disconnects it. Unlike hosted, the bindings are checked and active *before*
the OK reply, so a change committed after SUBSCRIBED is never missed; the `system` "Subscribed
to PostgreSQL" message still follows the reply. A join asking for `broadcast.replication_ready`
gets hosted's `system` "Replication connection established" after the reply (and any replay).
Likewise a replaying channel is a member of its topic before its replay is read: what arrives
meanwhile is held and follows the replayed messages, without those it already replayed, so
nothing falls between replay and live.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

import psycopg

from local.realtime.auth import TokenRejected
from local.realtime.bindings import binding_ids
from local.realtime.changes.router import SubscriptionFailed
from local.realtime.channel import Channel
from local.realtime.frames import Frame
from local.realtime.join_request import JoinRequest, parse_join
from local.realtime.messages import store
from local.realtime.messages.store import StoredMessage
from local.realtime.policies import Access, PolicyError, read_access

if TYPE_CHECKING:
    from local.realtime.connection import Connection

log = logging.getLogger(__name__)

#: What Elixir's `DateTime.from_unix(ms, :millisecond)` accepts (years -9999 to 9999).
_UNIX_MS = range(-377_705_116_800_000, 253_402_300_800_000)
_DEFAULT_REPLAY_LIMIT = 25


class JoinRefused(Exception):
    """A join the server answers with `{"status": "error", "response": {"reason": …}}`."""

    def __init__(self, reason: str, *, disconnect: bool = False) -> None:
        super().__init__(reason)
        self.disconnect = disconnect
        """Close the whole socket after the reply (the joins-per-second limit)."""


@dataclass(frozen=True, slots=True)
class ReplayWindow:
    since: int
    """Epoch milliseconds."""
    limit: int


async def join(connection: Connection, frame: Frame) -> None:
    """Handle one `phx_join` frame: reply, and on success start the channel."""
    previous = connection.channels.get(frame.topic)
    if previous is not None:  # a second join replaces the channel
        previous.close()
    if not frame.topic.startswith("realtime:"):
        connection.reply(frame, "error", {"reason": "unmatched topic"})
        return
    connection.joining.add(frame.topic)
    try:
        channel, replayed = await _open(connection, frame)
    except JoinRefused as exc:
        await asyncio.sleep(connection.engine.config.join_error_delay)
        connection.reply(frame, "error", {"reason": str(exc)})
        if exc.disconnect:
            connection.disconnect()
        return
    finally:
        connection.joining.discard(frame.topic)
    _announce(channel, frame, replayed)


async def _open(connection: Connection, frame: Frame) -> tuple[Channel, list[StoredMessage]]:
    engine = connection.engine
    subtopic = frame.topic.removeprefix("realtime:")
    if not subtopic:
        raise JoinRefused("TopicNameRequired: You must provide a topic name")
    if not isinstance(frame.payload, dict):
        raise JoinRefused("Unknown Error on Channel")
    request = parse_join(frame.payload, subtopic)
    _check_limits(connection, frame.topic)
    token = _token(request, connection.token)
    try:
        claims = await engine.auth.claims(token)
    except TokenRejected as exc:
        raise JoinRefused(exc.join_reason) from None
    access = await _read_access(connection, subtopic, claims, request) if request.private else None
    window = _replay_window(request, subtopic, access)
    ids = binding_ids(request.postgres_changes)
    channel = Channel(
        connection,
        frame,
        request,
        claims=claims,
        access_token=token,
        access=access,
        binding_ids=ids,
    )
    if request.postgres_changes:
        try:
            await engine.router.subscribe(
                channel, list(zip(ids, request.postgres_changes, strict=True))
            )
        except SubscriptionFailed as exc:
            channel.subscription_error = str(exc)
    replayed = await _replay(channel, window) if window is not None else []
    return channel, replayed


def _check_limits(connection: Connection, topic: str) -> None:
    limits, config = connection.engine.limits, connection.engine.config
    if connection not in limits.users and len(limits.users) >= config.max_concurrent_users:
        raise JoinRefused("ConnectionRateLimitReached: Too many connected users")
    if limits.joins.triggered:
        raise JoinRefused("ClientJoinRateLimitReached: Too many joins per second", disconnect=True)
    limits.joins.add()
    # Joins in progress on other topics count too: clients send their joins all at once.
    channels = len(connection.channels) + len(connection.joining - {topic})
    if channels >= config.max_channels_per_client:
        raise JoinRefused("ChannelRateLimitReached: Too many channels")


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
            connection.engine.pool,
            subtopic,
            claims,
            presence=request.presence_enabled,
            headers=connection.headers,
        )
    except PolicyError:
        access = Access()
    if not (access.broadcast or access.presence):
        raise JoinRefused(
            "Unauthorized: You do not have permissions to read from this Channel topic: " + subtopic
        )
    return access


def _replay_window(
    request: JoinRequest, subtopic: str, access: Access | None
) -> ReplayWindow | None:
    """`broadcast.replay`, checked as hosted checks it; None when there is nothing to replay."""
    if not request.wants_replay:
        return None
    if access is not None and not access.broadcast:
        raise JoinRefused(
            "Unauthorized: You do not have permissions to read from this Channel topic: " + subtopic
        )
    if not request.private:
        raise JoinRefused("UnableToReplayMessages: Replay is not allowed for public channels")
    params = request.replay
    if not isinstance(params, dict):
        return None  # hosted ignores a replay that is not a map
    since = params.get("since")
    limit = params.get("limit")
    limit = _DEFAULT_REPLAY_LIMIT if limit is None or limit is False else limit
    if not (_is_int(since) and _is_int(limit) and since in _UNIX_MS):
        raise JoinRefused("UnableToReplayMessages: Replay params are not valid")
    return ReplayWindow(since, limit)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


async def _replay(channel: Channel, window: ReplayWindow) -> list[StoredMessage]:
    """Read the replay with the channel already a member of its topic, holding what arrives."""
    engine = channel.engine
    channel.hold()
    engine.hub.add(channel.tenant_topic, channel)
    try:
        async with engine.pool.connection() as conn:
            messages = await store.replay(
                conn, channel.subtopic, since=window.since, limit=window.limit
            )
    except BaseException as exc:
        channel.terminate()  # out of the hub and the change router again
        if isinstance(exc, psycopg.Error):
            log.error("realtime: UnableToReplayMessages on %s: %s", channel.topic, exc)
            raise JoinRefused(
                "UnableToReplayMessages: Realtime was unable to replay messages"
            ) from None
        raise
    channel.replayed = frozenset(message.id for message in messages)
    return messages


def _announce(channel: Channel, frame: Frame, replayed: list[StoredMessage]) -> None:
    connection, engine, request = channel.connection, channel.engine, channel.request
    connection.adopt(channel)
    engine.hub.add(channel.tenant_topic, channel)
    engine.limits.users.add(connection)
    echoed = [
        {**binding, "id": binding_id}
        for binding, binding_id in zip(request.postgres_changes, channel.binding_ids, strict=True)
    ]
    channel.reply(frame.ref, "ok", {"postgres_changes": echoed})
    channel.watch_token()
    for message in replayed:  # V1 sockets cannot carry binary payloads: skipped, as hosted
        channel.push("broadcast", message.replayed())
    if request.replication_ready:
        # Hosted waits (up to a minute) for its replication connection; the local server's
        # change capture is running before it accepts a socket, so it is established at once.
        channel.push_system("system", "ok", "Replication connection established")
    channel.release()
    if request.presence_enabled and channel.accepts("presence_diff"):
        channel.push_presence_state()
    if request.postgres_changes:
        error = channel.subscription_error
        channel.push_system(
            "postgres_changes", "error" if error else "ok", error or "Subscribed to PostgreSQL"
        )
