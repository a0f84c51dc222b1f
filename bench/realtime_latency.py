"""Benchmark: DB commit → client receive latency of postgres_changes through the local server.

    .venv/bin/python -m bench.realtime_latency [--events 500]

A user subscribes (official Python client, RLS applied, `session_id=eq.` filter) to INSERTs on
`agent_chat_messages`; rows are committed one by one ("sequential": the next insert waits for
the previous message) and then back to back ("burst"). Latency is measured from the moment the
INSERT's autocommit returns to the moment the client's callback runs. Uses a fresh database on
DATABASE_URL's server or the embedded Postgres, dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import psycopg
from realtime import AsyncRealtimeClient, RealtimePostgresChangesListenEvent

from local.realtime import RealtimeConfig, RealtimeServer
from shared.auth import mint_token
from shared.db import Database
from shared.db.records import AgentThread
from shared.settings import LOCAL_JWT_SECRET
from tests import databases
from tests.factories import make_thread, make_user

INSERT = """INSERT INTO agent_chat_messages
              (agent_session_id, session_id, user_id, message_type, content)
            VALUES (%s, %s, %s, 'status', %s)"""


class Stopwatch:
    """Receive times by message content, and futures to wait on them."""

    def __init__(self) -> None:
        self.received: dict[str, float] = {}
        self._waiting: dict[str, asyncio.Future[None]] = {}

    def on_change(self, change: Any) -> None:
        content = change["data"]["record"]["content"]
        self.received[content] = time.perf_counter()
        waiter = self._waiting.pop(content, None)
        if waiter is not None:
            _settle(waiter)

    def expect(self, content: str) -> asyncio.Future[None]:
        future = asyncio.get_running_loop().create_future()
        self._waiting[content] = future
        return future


async def sequential(conn: Any, thread: AgentThread, clock: Stopwatch, n: int) -> list[float]:
    latencies = []
    for i in range(n):
        content = f"seq-{i}"
        arrived = clock.expect(content)
        await conn.execute(INSERT, (thread.id, thread.session_id, thread.user_id, content))
        committed = time.perf_counter()
        await asyncio.wait_for(arrived, 10)
        latencies.append(clock.received[content] - committed)
    return latencies


async def burst(conn: Any, thread: AgentThread, clock: Stopwatch, n: int) -> list[float]:
    committed: dict[str, float] = {}
    last = clock.expect(f"burst-{n - 1}")
    for i in range(n):
        content = f"burst-{i}"
        await conn.execute(INSERT, (thread.id, thread.session_id, thread.user_id, content))
        committed[content] = time.perf_counter()
    await asyncio.wait_for(last, 60)
    return [clock.received[content] - at for content, at in committed.items()]


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def summary(name: str, latencies: list[float], elapsed: float) -> str:
    ms = sorted(x * 1000 for x in latencies)
    q = statistics.quantiles(ms, n=100)
    return (
        f"{name:<10} events={len(ms):>5}  p50={q[49]:7.2f} ms  p95={q[94]:7.2f} ms  "
        f"p99={q[98]:7.2f} ms  max={ms[-1]:7.2f} ms  ({len(ms) / elapsed:,.0f} events/s)"
    )


async def run(events: int) -> None:
    server_url = databases.server_url()
    url = databases.create_database(server_url, template=databases.ensure_template(server_url))
    try:
        async with Database(url) as db:
            user = await make_user(db)
            thread = await make_thread(db, user)
        config = RealtimeConfig(database_url=url, port=0)
        async with (
            RealtimeServer(config) as server,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
        ):
            client = AsyncRealtimeClient(
                server.realtime_url, mint_token(LOCAL_JWT_SECRET, role="anon")
            )
            await client.set_auth(mint_token(LOCAL_JWT_SECRET, sub=user))
            clock = Stopwatch()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            channel = client.channel(f"session:{thread.session_id}")
            channel.on_postgres_changes(
                RealtimePostgresChangesListenEvent.Insert, clock.on_change,
                table="agent_chat_messages", filter=f"session_id=eq.{thread.session_id}",
            )  # fmt: skip
            channel.on_system(lambda _payload: _settle(ready))
            await channel.subscribe()
            await asyncio.wait_for(ready, 10)
            for name, mode in (("sequential", sequential), ("burst", burst)):
                started = time.perf_counter()
                latencies = await mode(conn, thread, clock, events)
                print(summary(name, latencies, time.perf_counter() - started), flush=True)
            await client.close()
    finally:
        databases.drop_database(server_url, url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500, help="events per mode (default 500)")
    asyncio.run(run(parser.parse_args().events))


if __name__ == "__main__":
    main()
