"""`realtime.messages` as the hosted Realtime service tends it: partitions, pruning, replay.

Hosted creates the daily partitions from yesterday to three days ahead when it connects to a
project and every 4 h after, and drops those older than 72 h (`Realtime.Tenants`,
`Realtime.Messages`). Replay returns the newest `limit` (1–25) private broadcasts of a topic
inserted since a moment, oldest first. A plain (unpartitioned) `realtime.messages`, left by an
older install, still works: its old rows are deleted instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any

from psycopg import AsyncConnection

from local.realtime.frames import RawJson, UserBroadcast, dumps

#: Channel the `realtime.messages` trigger NOTIFYs (see announce.sql).
NOTIFY_CHANNEL = "parley_realtime_messages"
REPLAY_MAX = 25
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('parley_realtime messages'))"

#: Create yesterday's partition to three days ahead (UTC dates, as hosted); no-op when
#: `realtime.messages` is not partitioned. Plain SQL, so tests can run it on any connection.
CREATE_PARTITIONS = """
DO $partitions$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    day date;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('realtime.messages')) <> 'p' THEN
        RETURN;
    END IF;
    FOR day IN SELECT generate_series(today - 1, today + 3, interval '1 day')::date LOOP
        EXECUTE format(
            'CREATE TABLE IF NOT EXISTS realtime.%I PARTITION OF realtime.messages '
            'FOR VALUES FROM (%L) TO (%L)',
            'messages_' || to_char(day, 'YYYY_MM_DD'), day, day + 1);
    END LOOP;
END
$partitions$
"""

_OLD_PARTITIONS = """
SELECT format('%%I.%%I', n.nspname, c.relname)
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE i.inhparent = 'realtime.messages'::regclass
   AND c.relname ~ '^messages_\\d{4}_\\d{2}_\\d{2}$'
   AND to_date(substr(c.relname, 10), 'YYYY_MM_DD')
       < ((now() AT TIME ZONE 'UTC') - make_interval(hours => %(hours)s))::date
"""

_REPLAY = """
SELECT id::text, event, payload::text, binary_payload
  FROM realtime.messages
 WHERE topic = %(topic)s AND private IS TRUE AND extension = 'broadcast'
   AND inserted_at >= to_timestamp(%(since)s / 1000.0)::timestamp
   AND inserted_at < now()::timestamp + interval '1 minute'
 ORDER BY inserted_at DESC
 LIMIT %(limit)s
"""

_ONE = """
SELECT id::text, event, payload::text, binary_payload, topic, private
  FROM realtime.messages WHERE id = %s AND inserted_at = %s
"""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A broadcast row of `realtime.messages`."""

    id: str
    event: str | None
    payload: RawJson | bytes | None
    """The JSON payload as Postgres rendered it, or the binary payload."""

    @property
    def size(self) -> int:
        if isinstance(self.payload, RawJson):
            return len(self.payload.text.encode())
        return len(self.payload or b"")

    def broadcast(self, meta: dict[str, Any]) -> UserBroadcast:
        """As a user broadcast carrying `meta` (`{"id": …}` live, plus `"replayed"` on replay)."""
        event = self.event or ""
        if isinstance(self.payload, RawJson):
            return UserBroadcast(event, self.payload.text.encode(), True, meta)
        return UserBroadcast(event, self.payload or b"", False, meta)

    def replayed(self) -> RawJson | UserBroadcast:
        """What a replaying channel is pushed: JSON as a text frame (binary as kind 4)."""
        broadcast = self.broadcast({"replayed": True, "id": self.id})
        if not broadcast.is_json:
            return broadcast
        return RawJson(
            f'{{"payload":{self.payload_text},"event":{dumps(broadcast.event)},'
            f'"type":"broadcast","meta":{dumps(broadcast.meta)}}}'
        )

    @property
    def payload_text(self) -> str:
        return self.payload.text if isinstance(self.payload, RawJson) else "null"


def _message(row: tuple[Any, ...]) -> StoredMessage:
    message_id, event, payload, binary = row[:4]
    body = RawJson(payload) if payload is not None else bytes(binary) if binary else None
    return StoredMessage(str(message_id), event, body)


async def install(conn: AsyncConnection[Any]) -> None:
    """Create what is missing of Supabase's objects, and the NOTIFY trigger."""
    files = resources.files(__package__)
    async with conn.transaction():
        await conn.execute(_LOCK)
        await conn.execute(files.joinpath("schema.sql").read_text())
        await conn.execute(files.joinpath("announce.sql").read_text())


async def tend(conn: AsyncConnection[Any], retention_hours: int) -> list[str]:
    """Hosted's janitor: drop partitions past retention, create the coming ones; what it dropped.

    On an unpartitioned table the rows past retention are deleted instead.
    """
    async with conn.transaction():
        await conn.execute(_LOCK)
        cur = await conn.execute(
            "SELECT relkind FROM pg_class WHERE oid = 'realtime.messages'::regclass"
        )
        row = await cur.fetchone()
        if row is None or row[0] != "p":
            await conn.execute(
                "DELETE FROM realtime.messages "
                "WHERE inserted_at < now()::timestamp - make_interval(hours => %s)",
                (retention_hours,),
            )
            return []
        cur = await conn.execute(_OLD_PARTITIONS, {"hours": retention_hours})
        dropped = [str(name) for (name,) in await cur.fetchall()]
        for name in dropped:
            await conn.execute(f"DROP TABLE IF EXISTS {name}")
        await conn.execute(CREATE_PARTITIONS)
    return dropped


async def replay(
    conn: AsyncConnection[Any], topic: str, *, since: int, limit: int
) -> list[StoredMessage]:
    """The newest `limit` (clamped to 1–25) private broadcasts on `topic` since `since` (epoch
    ms), oldest first. Read as the server: the join already checked the channel's policies."""
    cur = await conn.execute(
        _REPLAY, {"topic": topic, "since": since, "limit": max(1, min(limit, REPLAY_MAX))}
    )
    return [_message(row) for row in reversed(await cur.fetchall())]


async def fetch(
    conn: AsyncConnection[Any], message_id: str, inserted_at: datetime
) -> tuple[StoredMessage, str, bool | None] | None:
    """One message by its key, with its topic and `private` flag (None if gone meanwhile)."""
    cur = await conn.execute(_ONE, (message_id, inserted_at))
    row = await cur.fetchone()
    if row is None:
        return None
    return _message(row), str(row[4]), row[5]
