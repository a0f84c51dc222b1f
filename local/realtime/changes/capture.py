"""Installing and tending the change capture the server puts into the database it serves.

On hosted Supabase the Realtime server reads the WAL; here the server installs schema
`parley_realtime` itself at startup (never through the project's migrations): a change log,
AFTER ROW triggers on every table of the publication, and the routing functions. Installing is
idempotent and serialised with an advisory lock, so several servers may share a database.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from psycopg import AsyncConnection

#: Channel the capture trigger NOTIFYs: payload "<change id>,<table oid>,<I|U|D>".
NOTIFY_CHANNEL = "parley_realtime"
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('parley_realtime install'))"


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text()


async def install(conn: AsyncConnection[Any], publication: str) -> frozenset[int]:
    """Create or update the capture schema and triggers; the oids of the captured tables."""
    async with conn.transaction():
        await conn.execute(_LOCK)
        await conn.execute(_sql("capture.sql"))
        await conn.execute(_sql("routing.sql"))
    return await sync_triggers(conn, publication)


async def sync_triggers(conn: AsyncConnection[Any], publication: str) -> frozenset[int]:
    """Capture exactly the publication's tables; the oids of the captured tables."""
    async with conn.transaction():
        await conn.execute(_LOCK)
        cur = await conn.execute("SELECT parley_realtime.sync_triggers(%s)", (publication,))
        row = await cur.fetchone()
    oids = row[0] if row else None
    return frozenset(int(str(oid)) for oid in oids) if isinstance(oids, list) else frozenset()


async def prune(conn: AsyncConnection[Any], retention_seconds: float) -> int:
    """Drop captured changes older than the retention; how many were dropped."""
    cur = await conn.execute(
        "DELETE FROM parley_realtime.changes WHERE captured_at < now() - make_interval(secs => %s)",
        (retention_seconds,),
    )
    return cur.rowcount


async def uninstall(conn: AsyncConnection[Any]) -> None:
    """Remove the capture schema, its triggers included (the `realtime` schema stays)."""
    async with conn.transaction():
        await conn.execute(_LOCK)
        await conn.execute("DROP SCHEMA IF EXISTS parley_realtime CASCADE")
