"""Benchmark: the statements and transactions one turn sends to Postgres, by kind of turn.

    .venv/bin/python -m bench.sql_per_turn [--turns 3] [--top 12] [--tokens-from-database]

Runs on a dedicated embedded Postgres (a fresh cluster in a temporary folder) that logs every
statement (`log_statement = all`) with the client's `application_name` and the virtual
transaction id, so what it counts is what the server received: each logged statement (a
`BEGIN` and a `COMMIT` are statements: they are round trips) and each distinct transaction
(a statement sent outside a transaction is one). Turns go through the chat function's own path
against the fake model (`bench.turn_kinds`); the first turn of each kind warms the process up
and is not counted. Prints, per kind, the statements and transactions of one turn, the
writes among them, the rows it added to `realtime.messages` (its events sent from the
database), its token batches, and the statements sent most often.

`--tokens-from-database` measures the alternative to sending token batches over Realtime's
REST endpoint: each batch is also sent from the database the way the other events are
(`parley_private.send_events`, one statement and one `realtime.messages` row a batch).
The fake model streams each reply at once, so a reply is one batch here; a real model's
stream closes a batch every 0.1 s (about 8 a second of streaming, see docs/events.md).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from bench.turn_kinds import KINDS, Harness, Kind, harness, send
from local.postgres import start_embedded
from shared.db import Database
from shared.events import Event

APP = "parley_sql_bench"
PREFIX = "parley|"
LOG_LINE = re.compile(r"^parley\|(?P<app>[^|]*)\|(?P<vxid>[^|]*)\|\s*LOG:\s+(?P<what>.*)$")
STATEMENT = re.compile(r"^(?:statement|execute [^:]*): (?P<sql>.*)$")
WRITES = re.compile(r"^\s*(?:WITH\b.*?\b)?(INSERT|UPDATE|DELETE)\b", re.IGNORECASE | re.DOTALL)


SEND_TOKENS = "SELECT parley_private.send_events(%s, %s, true)"


@dataclass
class Tally:
    statements: list[tuple[str, str]] = field(default_factory=list)  # (vxid, sql)
    events: int = 0
    """Rows the turn added to `realtime.messages`."""
    batches: int = 0
    """Token batches the turn streamed."""

    @property
    def transactions(self) -> int:
        return len({vxid for vxid, _ in self.statements})

    @property
    def bracketing(self) -> int:
        return sum(1 for _, s in self.statements if _verb(s) in ("BEGIN", "COMMIT", "ROLLBACK"))

    @property
    def writes(self) -> int:
        return sum(1 for _, s in self.statements if WRITES.match(s))

    def top(self, n: int) -> list[tuple[int, str]]:
        counts = Counter(_shape(s) for _, s in self.statements)
        return [(c, s) for s, c in counts.most_common(n) if c > 1]


def _verb(sql: str) -> str:
    return sql.strip().split(None, 1)[0].rstrip(";").upper() if sql.strip() else ""


def _shape(sql: str) -> str:
    """A statement's text, one line, cut short: how repeats are told apart."""
    one_line = " ".join(sql.split())
    return one_line[:110]


def dedicated_server(folder: Path) -> str:
    """A fresh embedded cluster logging every statement; returns its maintenance URL."""
    url = start_embedded(folder)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        conn.execute(f"ALTER SYSTEM SET log_line_prefix = '{PREFIX}%a|%v| '")
        conn.execute("SELECT pg_reload_conf()")
    return url


def _size(log: Path) -> int:
    return log.stat().st_size


def read_log(log: Path, start: int) -> Tally:
    """The statements `APP` sent since byte `start` of the server's log (a statement's text
    may run over several lines)."""
    tally = Tally()
    with log.open("r", errors="replace") as f:
        f.seek(start)
        lines = f.read().splitlines()
    entry: tuple[str, list[str]] | None = None
    for line in [*lines, f"{PREFIX}|| LOG:  end"]:  # flushes the last entry
        match = LOG_LINE.match(line)
        if match is None:
            if entry is not None and not line.startswith(PREFIX):
                entry[1].append(line.strip())
            continue
        if entry is not None:
            tally.statements.append((entry[0], " ".join(entry[1])))
            entry = None
        found = STATEMENT.match(match["what"])
        if match["app"] == APP and found is not None:
            entry = (match["vxid"], [found["sql"]])
    return tally


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
) -> list[Tally]:
    services = h.services(application_name=APP)
    batches = TokenBatches(services.db, from_database=tokens_from_database)
    services.event_sinks = (batches,)
    user = await h.user()
    try:
        await send(services, user, kind)  # warm up: imports, pool, tokenizer
        tallies = []
        for _ in range(turns):
            start, events, batches.count = _size(log), await _messages(h), 0
            answer = await send(services, user, kind)
            assert answer.strategy == kind, answer
            tally = read_log(log, start)
            tally.events, tally.batches = await _messages(h) - events, batches.count
            tallies.append(tally)
        return tallies
    finally:
        await services.aclose()


def report(kind: Kind, tallies: list[Tally], top: int) -> None:
    counts = sorted(len(t.statements) for t in tallies)
    last = tallies[-1]
    print(
        f"{kind:<8} statements={len(last.statements):>4}  transactions={last.transactions:>3}  "
        f"BEGIN/COMMIT={last.bracketing:>3}  writes={last.writes:>3}  "
        f"events={last.events:>3}  token batches={last.batches:>2}  "
        f"(over {len(tallies)} turns: {counts[0]}–{counts[-1]} statements)"
    )
    for count, shape in last.top(top):
        print(f"    {count:>3}×  {shape}")


async def run(args: argparse.Namespace, server: str, log: Path) -> None:
    with harness(server) as h:
        for kind in args.kinds:
            tallies = await measure(
                h, log, kind, args.turns, tokens_from_database=args.tokens_from_database
            )
            report(kind, tallies, args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3, help="measured turns per kind")
    parser.add_argument("--top", type=int, default=12, help="repeated statements to show")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument(
        "--tokens-from-database", action="store_true",
        help="also send every token batch from the database (what that path would cost)",
    )  # fmt: skip
    args = parser.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    with tempfile.TemporaryDirectory(prefix="parley-sql-bench-") as tmp:
        server = dedicated_server(Path(tmp))
        log = Path(tmp) / "postgres" / "log"
        asyncio.run(run(args, server, log))


if __name__ == "__main__":
    main()
