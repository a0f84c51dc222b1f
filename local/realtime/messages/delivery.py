"""Broadcast from Database: each committed `realtime.messages` broadcast, to its channel.

What the hosted `ReplicationConnection` does with a streamed insert: the message goes to the
public or private channel of its `topic` (by the row's `private`) as a user broadcast with
`meta: {"id": <row id>}`, under the `event` of the row, to the members allowed to read
broadcasts there (private channels: the read policies checked at join). It counts against the
events-per-second limit and is dropped while that limit is tripped or when it is larger than
the payload limit.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from local.realtime.changes.router import Pool
from local.realtime.frames import RawJson, dumps
from local.realtime.hub import Hub, tenant_topic
from local.realtime.limits import TenantLimits
from local.realtime.messages import store
from local.realtime.messages.store import StoredMessage

log = logging.getLogger(__name__)


class DatabaseBroadcasts:
    """Turns `parley_realtime_messages` notices into broadcasts."""

    def __init__(self, pool: Pool, hub: Hub, limits: TenantLimits, max_payload_bytes: int) -> None:
        self._pool = pool
        self._hub = hub
        self._limits = limits
        self._max_payload_bytes = max_payload_bytes

    async def announce(self, notice: str) -> int:
        """Deliver the message a notice announces; how many channels got it."""
        found = await self._read(json.loads(notice))
        if found is None:
            return 0
        message, topic, private = found
        if message.event is None or private is None or message.payload is None:
            log.warning(
                "realtime: UnableToBroadcastChanges: no event, private or payload (%s)", message.id
            )
            return 0
        if self._limits.events.triggered:
            log.warning("realtime: UnableToBroadcastChanges: too_many_requests (%s)", message.id)
            return 0
        if message.size > self._max_payload_bytes:
            log.warning("realtime: UnableToBroadcastChanges: payload too large (%s)", message.id)
            return 0
        self._limits.events.add()
        return self._hub.publish(
            tenant_topic(topic, private=private),
            "broadcast",
            message.broadcast({"id": message.id}),
            message_id=message.id,
        )

    async def _read(self, notice: dict[str, Any]) -> tuple[StoredMessage, str, bool | None] | None:
        if "topic" in notice:  # the whole message came with the notice
            payload = notice.get("payload")
            body = RawJson(dumps(payload)) if payload is not None else None
            message = StoredMessage(str(notice["id"]), notice.get("event"), body)
            return message, str(notice["topic"]), notice.get("private")
        inserted_at = datetime.fromisoformat(str(notice["inserted_at"]))
        async with self._pool.connection() as conn:
            return await store.fetch(conn, str(notice["id"]), inserted_at)
