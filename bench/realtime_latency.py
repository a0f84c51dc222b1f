"""Benchmark: publish → client latency through the local Realtime server, per delivery path.

    .venv/bin/python -m bench.realtime_latency [--events 500] [--paths changes,db,rest,tokens]

A user follows their session with the official Python client, four ways:

* `changes` — postgres_changes: INSERTs on `agent_chat_messages` (RLS applied, filtered by
  `session_id=eq.`), timed from the moment the INSERT's autocommit returns;
* `db` — Broadcast from Database: `SELECT realtime.send(…, private => true)` on the private
  channel `session:<id>` (authorised by the migrations' policy), timed from its commit;
* `rest` — the REST broadcast endpoint (`POST /api/broadcast`, service key, private), timed
  from the 202 response;
* `tokens` — Parley's own REST publisher for token batches (`SupabaseRealtimePublisher`: the
  first event of a batch starts a 50 ms linger, then one POST), timed from `publish()`, which
  returns at once (the POST runs in the background).

Each path is run "sequential" (the next event waits for the previous one to arrive) and then
"burst" (back to back). Latency runs from the publish call's return to the client's callback;
"publish call" is how long the publisher itself waits (commit, or the HTTP round trip). Uses
a fresh database on DATABASE_URL's server or the embedded Postgres, dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx2
import psycopg
from psycopg.types.json import Jsonb
from realtime import AsyncRealtimeChannel, AsyncRealtimeClient, RealtimePostgresChangesListenEvent

from local.auth.keys import mint_token
from local.realtime import RealtimeConfig, RealtimeServer
from shared.db import Database
from shared.db.records import AgentThread
from shared.events import Event
from shared.events.realtime import SupabaseRealtimePublisher
from shared.kernel.settings import LOCAL_JWT_SECRET
from tests.support import databases
from tests.support.factories import make_thread, make_user

INSERT = """INSERT INTO agent_chat_messages
              (agent_session_id, session_id, user_id, plan_id, message_type, content)
            VALUES (%s, %s, %s, %s, 'status', %s)"""
SEND = "SELECT realtime.send(%s, 'bench', %s, true)"
PATHS = ("changes", "db", "rest", "tokens")
#: The local server's limits are hosted's (100 messages/s); a benchmark measures past them.
UNLIMITED = 1_000_000

Publish = Callable[[str], Awaitable[None]]
"""Publishes one event identified by a key; returns once it is committed / accepted."""


class Stopwatch:
    """Receive times by key, and futures to wait on them."""

    def __init__(self) -> None:
        self.received: dict[str, float] = {}
        self._waiting: dict[str, asyncio.Future[None]] = {}

    def arrived(self, key: str) -> None:
        self.received[key] = time.perf_counter()
        waiter = self._waiting.pop(key, None)
        if waiter is not None:
            _settle(waiter)

    def expect(self, key: str) -> asyncio.Future[None]:
        future = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        return future


async def sequential(
    publish: Publish, clock: Stopwatch, prefix: str, n: int
) -> tuple[list[float], list[float]]:
    latencies, calls = [], []
    for i in range(n):
        key = f"{prefix}-seq-{i}"
        arrived = clock.expect(key)
        calling = time.perf_counter()
        await publish(key)
        published = time.perf_counter()
        await asyncio.wait_for(arrived, 10)
        latencies.append(clock.received[key] - published)
        calls.append(published - calling)
    return latencies, calls


async def burst(
    publish: Publish, clock: Stopwatch, prefix: str, n: int
) -> tuple[list[float], list[float]]:
    published: dict[str, float] = {}
    calls = []
    # Every key awaited, not just the last: requests in flight at once may arrive out of order.
    arrivals = [clock.expect(f"{prefix}-burst-{i}") for i in range(n)]
    for i in range(n):
        key = f"{prefix}-burst-{i}"
        calling = time.perf_counter()
        await publish(key)
        published[key] = time.perf_counter()
        calls.append(published[key] - calling)
    await asyncio.wait_for(asyncio.gather(*arrivals), 120)
    return [clock.received[key] - at for key, at in published.items()], calls


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def summary(name: str, latencies: list[float], calls: list[float], elapsed: float) -> str:
    ms = sorted(x * 1000 for x in latencies)
    q = statistics.quantiles(ms, n=100)
    call = statistics.median(calls) * 1000
    return (
        f"{name:<18} events={len(ms):>4}  p50={q[49]:7.2f} ms  p95={q[94]:7.2f} ms  "
        f"p99={q[98]:7.2f} ms  max={ms[-1]:7.2f} ms  publish call p50={call:6.2f} ms  "
        f"({len(ms) / elapsed:,.0f} events/s)"
    )


async def subscribe(channel: AsyncRealtimeChannel) -> None:
    joined: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    await channel.subscribe(lambda _state, _error: _settle(joined))
    await asyncio.wait_for(joined, 10)


async def run(events: int, paths: list[str]) -> None:
    server_url = databases.server_url()
    url = databases.create_database(server_url, template=databases.ensure_template(server_url))
    try:
        async with Database(url) as db:
            user = await make_user(db)
            thread = await make_thread(db, user)
        config = RealtimeConfig(
            database_url=url,
            port=0,
            max_events_per_second=UNLIMITED,
            max_joins_per_second=UNLIMITED,
        )
        async with (
            RealtimeServer(config) as server,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
            httpx2.AsyncClient(base_url=server.realtime_url) as http,
        ):
            client = AsyncRealtimeClient(
                server.realtime_url, mint_token(LOCAL_JWT_SECRET, role="anon")
            )
            await client.set_auth(mint_token(LOCAL_JWT_SECRET, sub=user))
            clock = Stopwatch()
            tokens = SupabaseRealtimePublisher(
                supabase_url=server.url,
                service_key=mint_token(LOCAL_JWT_SECRET, role="service_role"),
                private=True,
                client=http,
            )
            publishers = await _follow(client, clock, conn, http, thread, tokens)
            for path in paths:
                for mode_name, mode in (("sequential", sequential), ("burst", burst)):
                    started = time.perf_counter()
                    latencies, calls = await mode(publishers[path], clock, path, events)
                    elapsed = time.perf_counter() - started
                    print(summary(f"{path} {mode_name}", latencies, calls, elapsed), flush=True)
            await tokens.aclose()
            await client.close()
    finally:
        databases.drop_database(server_url, url)


async def _follow(
    client: AsyncRealtimeClient,
    clock: Stopwatch,
    conn: psycopg.AsyncConnection[Any],
    http: httpx2.AsyncClient,
    thread: AgentThread,
    tokens: SupabaseRealtimePublisher,
) -> dict[str, Publish]:
    """Subscribe to the four paths; the publisher of each."""
    topic = f"session:{thread.session_id}"
    changes = client.channel(f"changes:{thread.session_id}")
    changes.on_postgres_changes(
        RealtimePostgresChangesListenEvent.Insert,
        lambda change: clock.arrived((change["data"].get("record") or {})["content"]),
        table="agent_chat_messages",
        filter=f"session_id=eq.{thread.session_id}",
    )
    broadcasts = client.channel(
        topic, {"config": {"broadcast": None, "presence": None, "private": True}}
    )
    broadcasts.on_broadcast("bench", lambda message: clock.arrived(message["payload"]["k"]))
    broadcasts.on_broadcast(
        "token", lambda message: clock.arrived(message["payload"]["data"]["text"])
    )
    await subscribe(changes)
    await subscribe(broadcasts)
    service = {"Authorization": f"Bearer {mint_token(LOCAL_JWT_SECRET, role='service_role')}"}

    async def insert(key: str) -> None:
        await conn.execute(
            INSERT, (thread.id, thread.session_id, thread.user_id, thread.plan_id, key)
        )

    async def send(key: str) -> None:
        await conn.execute(SEND, (Jsonb({"k": key}), topic))

    async def post(key: str) -> None:
        message = {"topic": topic, "event": "bench", "payload": {"k": key}, "private": True}
        response = await http.post("/api/broadcast", json={"messages": [message]}, headers=service)
        response.raise_for_status()

    async def token(key: str) -> None:
        await tokens.publish(
            [
                Event(
                    type="token",
                    session_id=thread.session_id,
                    plan_id=thread.plan_id,
                    agent_id=None,
                    seq=1,
                    ts=datetime.now(UTC),
                    data={"text": key},
                )
            ]
        )

    return {"changes": insert, "db": send, "rest": post, "tokens": token}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500, help="events per mode (default 500)")
    parser.add_argument(
        "--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}"
    )
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    if unknown := set(paths) - set(PATHS):
        parser.error(f"unknown paths: {', '.join(sorted(unknown))}")
    asyncio.run(run(args.events, paths))


if __name__ == "__main__":
    main()
