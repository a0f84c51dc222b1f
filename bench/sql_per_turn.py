"""Benchmark: the statements and transactions one turn sends to Postgres, by kind of turn.

    .venv/bin/python -m bench.sql_per_turn [--turns 3] [--top 12] [--tokens-from-database]

Runs on a dedicated embedded Postgres (a fresh cluster in a temporary folder) that logs every
statement with the client's `application_name` and the virtual transaction id
(`tests.support.statement_log`), so what it counts is what the server received: each logged
statement (a `BEGIN` and a `COMMIT` are statements: they are round trips) and each distinct
transaction (a statement sent outside a transaction is one). Turns go through the chat function's
own path against the fake model (`tests.support.turn_kinds`); the first turn of each kind warms the
process up and is not counted. Prints, per kind, the statements and transactions of one turn, the
writes among them, the rows it added to `realtime.messages` (its events sent from the database), its
token batches, and the statements sent most often.

`--tokens-from-database` measures the alternative to sending token batches over Realtime's
REST endpoint: each batch is also sent from the database the way the other events are
(`parley_private.send_events`, one statement and one `realtime.messages` row a batch).
The fake model streams each reply at once, so a reply is one batch here; a real model's
stream closes a batch every 0.1 s (about 8 a second of streaming, see docs/events.md).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from shared.db import Database
from shared.events import Event
from tests.support.statement_log import Statements, log_size, logging_server, read_log
from tests.support.turn_kinds import KINDS, Harness, Kind, harness, send

APP = "parley_sql_bench"
SEND_TOKENS = "SELECT parley_private.send_events(%s, %s, true)"


@dataclass
class Turn:
    sent: Statements
    events: int
    """Rows the turn added to `realtime.messages`."""
    batches: int
    """Token batches the turn streamed."""


class TokenBatches:
    """An event sink that counts token batches and, `from_database`, sends each from the
    database as well (in its own statement, as a durable event is sent)."""

    def __init__(self, db: Database, *, from_database: bool) -> None:
        self.db, self.from_database = db, from_database
        self.count = 0

    async def publish(self, events: Sequence[Event]) -> None:
        tokens = [e for e in events if e.type == "token"]
        self.count += len(tokens)
        if tokens and self.from_database:
            async with self.db.autocommit() as conn:
                await conn.execute(
                    SEND_TOKENS, (tokens[0].session_id, Jsonb([e.wire() for e in tokens]))
                )

    async def aclose(self) -> None:
        return None


async def _messages(h: Harness) -> int:
    async with await psycopg.AsyncConnection.connect(h.url) as conn:
        cur = await conn.execute("SELECT count(*) FROM realtime.messages")
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def measure(
    h: Harness, log: Path, kind: Kind, turns: int, *, tokens_from_database: bool = False
) -> list[Turn]:
    services = h.services(application_name=APP)
    batches = TokenBatches(services.db, from_database=tokens_from_database)
    services.event_sinks = (batches,)
    user = await h.user()
    try:
        await send(services, user, kind)  # warm up: imports, pool, tokenizer
        counted = []
        for _ in range(turns):
            start, events, batches.count = log_size(log), await _messages(h), 0
            answer = await send(services, user, kind)
            assert answer.strategy == kind, answer
            sent = read_log(log, start, APP)
            counted.append(Turn(sent, await _messages(h) - events, batches.count))
        return counted
    finally:
        await services.aclose()


def report(kind: Kind, counted: list[Turn], top: int) -> None:
    sizes = sorted(len(t.sent) for t in counted)
    last = counted[-1]
    print(
        f"{kind:<8} statements={len(last.sent):>4}  transactions={last.sent.transactions:>3}  "
        f"BEGIN/COMMIT={last.sent.bracketing:>3}  writes={last.sent.writes:>3}  "
        f"events={last.events:>3}  token batches={last.batches:>2}  "
        f"(over {len(counted)} turns: {sizes[0]}–{sizes[-1]} statements)"
    )
    for count, shape in last.sent.repeated(top):
        print(f"    {count:>3}×  {shape}")


async def run(args: argparse.Namespace, server: str, log: Path) -> None:
    with harness(server) as h:
        for kind in args.kinds:
            counted = await measure(
                h, log, kind, args.turns, tokens_from_database=args.tokens_from_database
            )
            report(kind, counted, args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3, help="measured turns per kind")
    parser.add_argument("--top", type=int, default=12, help="repeated statements to show")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument(
        "--tokens-from-database",
        action="store_true",
        help="also send each token batch from the database",
    )
    args = parser.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    with tempfile.TemporaryDirectory(prefix="parley-sql-bench-") as tmp:
        server, log = logging_server(Path(tmp))
        asyncio.run(run(args, server, log))


if __name__ == "__main__":
    main()
