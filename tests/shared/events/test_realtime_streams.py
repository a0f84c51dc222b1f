"""The streams' registry and the load it reports (`parley_private.realtime_load`), on Postgres.

A plan's stream is registered (or renewed) by the statement that reserves its tokens' numbers,
counted while live, no longer counted once it expires unrenewed (its process died) or ends, and
counted among the ended ones for the last batch it sent; the durable events of the window are
the project's `realtime.messages` broadcasts on private channels.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from psycopg.types.json import Jsonb

from shared.db import Database
from shared.db.database import Connection
from shared.db.transition_sql import STREAM_ENDED
from shared.events.pacing import LOAD_SQL, Load, LoadQuery, RealtimeBudget

FREE = RealtimeBudget(100)


async def load(conn: Connection, plan: UUID | None, **overrides: Any) -> Load:
    params = {**LoadQuery(plan, FREE, private=True).params(), **overrides}
    cur = await conn.execute(f"SELECT {LOAD_SQL} AS load", params)
    row = await cur.fetchone()
    assert row is not None
    found = Load.of(row["load"])
    assert found is not None
    return found


async def fresh(db: Database) -> None:
    """An empty registry and no recent broadcasts (the module's database is shared)."""
    async with db.service() as conn:
        await conn.execute("DELETE FROM parley_private.realtime_streams")
        await conn.execute("DELETE FROM realtime.messages")


async def test_streams_count_while_registered_and_stop_when_they_expire(db: Database) -> None:
    await fresh(db)
    first, second = uuid4(), uuid4()
    async with db.service() as conn:
        assert (await load(conn, first)).streams == 1
        assert (await load(conn, second)).streams == 2
        assert (await load(conn, first)).streams == 2  # renewed, not counted twice
        # The second's process died: nothing renews it, and past its expiry it stops counting.
        await conn.execute(
            "UPDATE parley_private.realtime_streams SET expires_at = now() - interval '1 second' "
            "WHERE plan_id = %s",
            (second,),
        )
        assert await load(conn, None) == Load(streams=1, ended=0, durable=0)


async def test_an_ended_stream_counts_among_the_last_batches_then_is_forgotten(
    db: Database,
) -> None:
    await fresh(db)
    plan = uuid4()
    async with db.service() as conn:
        await load(conn, plan)
        await conn.execute(f"WITH {STREAM_ENDED} SELECT count(*) FROM stream_ended", {"plan": plan})
        ended = await load(conn, None)
        assert (ended.streams, ended.ended, ended.durable) == (0, 1, 0)
        assert ended.ended_age is not None and 0 <= ended.ended_age < 10  # read as a rate
        assert (await load(conn, plan)).streams == 1  # its next call streams: live again
        await conn.execute(
            "UPDATE parley_private.realtime_streams SET expires_at = now() - interval '2 minutes', "
            "ended_at = now() - interval '2 minutes' WHERE plan_id = %s",
            (plan,),
        )
        assert (await load(conn, None)).ended == 0  # out of the window
        await load(conn, uuid4())  # the next registration deletes what is past counting
        cur = await conn.execute(
            "SELECT count(*) AS n FROM parley_private.realtime_streams WHERE plan_id = %s",
            (plan,),
        )
        assert await cur.fetchone() == {"n": 0}


async def test_durable_events_are_the_recent_broadcasts_on_private_channels(db: Database) -> None:
    await fresh(db)
    async with db.service() as conn:
        for private in (True, True, True, False):
            await conn.execute(  # an event and a topic not Parley's: the suite's check skips it
                "SELECT realtime.send(%s, 'probe', 'room:x', %s)", (Jsonb({"n": 1}), private)
            )
    async with db.service() as conn:
        recent = await load(conn, None)
        assert recent.durable == 3  # the public one has no index to count it by
        assert recent.durable_age is not None and 0 <= recent.durable_age < 10
        assert (await load(conn, None, load_cap=2)).durable == 2  # no need to count past it
        assert (await load(conn, None, load_private=False)).durable is None
        assert (await load(conn, None, load_window=0.0)).durable == 0
