"""Benchmark: the statements and transactions one turn sends to Postgres, by kind of turn.

    .venv/bin/python -m bench.sql_per_turn [--turns 3] [--top 12]

Runs on a dedicated embedded Postgres (a fresh cluster in a temporary folder) that logs every
statement with the client's `application_name` and the virtual transaction id
(`tests.statement_log`), so what it counts is what the server received: each logged statement
(a `BEGIN` and a `COMMIT` are statements: they are round trips) and each distinct transaction
(a statement sent outside a transaction is one). Turns go through the chat function's own path
against the fake model (`tests.turn_kinds`); the first turn of each kind warms the process up
and is not counted. Prints, per kind, the statements and transactions of one turn, the writes
among them, and the statements sent most often.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from tests.statement_log import Statements, log_size, logging_server, read_log
from tests.turn_kinds import KINDS, Harness, Kind, harness, send

APP = "parley_sql_bench"


async def measure(h: Harness, log: Path, kind: Kind, turns: int) -> list[Statements]:
    services = h.services(application_name=APP)
    user = await h.user()
    try:
        await send(services, user, kind)  # warm up: imports, pool, tokenizer
        counted = []
        for _ in range(turns):
            start = log_size(log)
            answer = await send(services, user, kind)
            assert answer.strategy == kind, answer
            counted.append(read_log(log, start, APP))
        return counted
    finally:
        await services.aclose()


def report(kind: Kind, counted: list[Statements], top: int) -> None:
    sizes = sorted(len(s) for s in counted)
    last = counted[-1]
    print(
        f"{kind:<8} statements={len(last):>4}  transactions={last.transactions:>3}  "
        f"BEGIN/COMMIT={last.bracketing:>3}  writes={last.writes:>3}  "
        f"(over {len(counted)} turns: {sizes[0]}–{sizes[-1]} statements)"
    )
    for count, shape in last.repeated(top):
        print(f"    {count:>3}×  {shape}")


async def run(args: argparse.Namespace, server: str, log: Path) -> None:
    with harness(server) as h:
        for kind in args.kinds:
            report(kind, await measure(h, log, kind, args.turns), args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3, help="measured turns per kind")
    parser.add_argument("--top", type=int, default=12, help="repeated statements to show")
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    with tempfile.TemporaryDirectory(prefix="parley-sql-bench-") as tmp:
        server, log = logging_server(Path(tmp))
        asyncio.run(run(args, server, log))


if __name__ == "__main__":
    main()
