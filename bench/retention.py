"""Benchmark: a year of turns, then retention — the bytes kept are what the settings say.

    .venv/bin/python -m bench.retention [--turns 100000] [--months 12] [--batch-plans 200]

Grows a database the way `bench.scale` does (its grower: real turns of each kind copied into
many users, their timestamps spread over `--months` months), then runs retention with the
default settings (`RETENTION_*_DAYS`, `shared.usecases.retention`) until it has caught up, one batch
statement after another, and prints:

* per kind of detail (dialogue, tool rounds, receipts, runs): its rows before and after, and
  the rows whose turn ended within the kept days (what must stay: the rows after must be
  exactly these — none older left, none younger gone), the batches it took and their
  statements' times;
* bytes per table before and after (each table rewritten compactly, `VACUUM FULL`, so a size is
  what its rows take; a running deployment reuses the freed pages instead);
* the bound the settings give: what the user sees, kept for every turn, plus each kind of
  detail for the turns of its last days only — in bytes per turn of each part, measured here,
  and what a database of that many turns a day holds after a year, against Supabase's Free
  (500 MB) and Pro (8 GB included) databases.

`DATABASE_URL` picks the server (a superuser's URL), else the embedded one. The database is
grown anew each run (retention changes it) and dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench import scale
from shared.db.records import Retained
from shared.db.retention_batches import RETAINED, delete_batch
from shared.kernel.settings import Settings
from shared.services import Services
from shared.usecases.retention import kept_days
from tests.support import databases

DETAIL: dict[Retained, list[tuple[str, str]]] = {
    # (table, the condition on its row `r` joined to its plan `p`)
    "dialogue": [("agent_chat_messages", "r.plan_id = p.id")],
    "tool_rounds": [
        (
            "chat_messages",
            "r.plan_id = p.id AND (r.role = 'tool' OR r.tool_calls IS NOT NULL)",
        ),
    ],
    "receipts": [("parley_private.tool_call_receipts", "r.plan_id = p.id")],
    "executions": [("agent_executions", "r.plan_id = p.id")],
}
"""Where each kind of detail lives (executor agents go with the dialogue: counted apart; a
step attempt's thread is its run's row, in `agent_executions`)."""
TABLES = """
SELECT c.oid::regclass::text AS name FROM pg_class c
 WHERE c.relkind = 'r' AND c.relnamespace = ANY(ARRAY['public', 'parley_private']::regnamespace[])
   AND c.relname <> 'alembic_version'"""
SIZE = "SELECT pg_total_relation_size(%s::regclass) AS bytes"
FREE, PRO = 500 * 10**6, 8 * 2**30


@dataclass
class Count:
    before: int
    after: int = 0
    within: int = 0
    """Rows of turns that ended within the kept days (or have not ended), counted after
    retention: `after` must be exactly these (none older left, none younger gone)."""


def _one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return next(iter(row.values()))


def count(conn: psycopg.Connection[Any], what: Retained, since: datetime) -> tuple[int, int]:
    """Rows of `what` in all, and those whose plan ended after `since` (or not yet)."""
    total = within = 0
    for table, condition in DETAIL[what]:
        total += _one(
            conn, f"SELECT count(*) AS n FROM {table} r JOIN agent_plans p ON {condition}"
        )
        within += _one(
            conn,
            f"""SELECT count(*) AS n FROM {table} r JOIN agent_plans p ON {condition}
                WHERE p.completed_at IS NULL
                   OR p.completed_at > %s""",
            (since,),
        )
    return total, within


def sizes(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Each table's bytes, indexes and TOAST included, once rewritten compactly."""
    names = [row["name"] for row in conn.execute(TABLES).fetchall()]
    for name in names:
        conn.execute(f"VACUUM FULL {name}")
    return {name: int(_one(conn, SIZE, (name,))) for name in names}


async def run_retention(
    settings: Settings, cutoffs: dict[Retained, datetime]
) -> dict[Retained, list[float]]:
    """Retention until caught up to `cutoffs` (the kept days before the run started: while it
    runs, turns keep ageing past them), a batch statement at a time, each one timed (ms)."""
    services = Services(settings)
    days = kept_days(settings)
    timings: dict[Retained, list[float]] = {what: [] for what in RETAINED}
    try:
        async with services.db.autocommit() as conn:
            for what in RETAINED:
                while True:
                    started = time.perf_counter()
                    batch = await delete_batch(
                        conn,
                        what=what,
                        days=days[what],
                        batch=settings.retention_batch_plans,
                        not_after=cutoffs[what],
                    )
                    timings[what].append((time.perf_counter() - started) * 1000)
                    if batch.plans < settings.retention_batch_plans:
                        break
    finally:
        await services.aclose()
    return timings


def report(args: argparse.Namespace) -> None:
    server = databases.server_url()
    db = f"parley_year_{args.turns}"
    layout = scale.Layout(args.turns, months=args.months)
    url = scale.prepare(server, db, layout, regrow=True, batch=25_000)
    settings = Settings(database_url=url, retention_batch_plans=args.batch_plans)
    days = kept_days(settings)
    try:
        with psycopg.connect(url, row_factory=dict_row, autocommit=True) as conn:
            turns = int(_one(conn, "SELECT count(*) AS n FROM agent_plans"))
            span = _one(
                conn,
                "SELECT extract(epoch FROM max(completed_at) - min(completed_at)) / 86400 AS d "
                "FROM agent_plans",
            )
            now = _one(conn, "SELECT now() AS now")
            cutoffs = {what: now - timedelta(days=days[what]) for what in RETAINED}
            counts = {what: Count(count(conn, what, cutoffs[what])[0]) for what in RETAINED}
            outside = {
                what: int(
                    _one(
                        conn,
                        "SELECT count(*) AS n FROM agent_plans WHERE completed_at <= %s",
                        (cutoffs[what],),
                    )
                )
                for what in RETAINED
            }
            agents = int(_one(conn, "SELECT count(*) AS n FROM agents WHERE role = 'executor'"))
            before = sizes(conn)
        timings = asyncio.run(run_retention(settings, cutoffs))
        with psycopg.connect(url, row_factory=dict_row, autocommit=True) as conn:
            for what in RETAINED:
                counts[what].after, counts[what].within = count(conn, what, cutoffs[what])
            agents_after = int(
                _one(conn, "SELECT count(*) AS n FROM agents WHERE role = 'executor'")
            )
            after = sizes(conn)
    finally:
        databases.drop_database(server, url)
    print(
        f"bench.retention: {turns:,} turns ended over {float(span):.0f} days; retention with "
        f"the defaults ({', '.join(f'{w} {d} d' for w, d in days.items())}), batches of "
        f"{args.batch_plans} turns"
    )
    header = f"{'before':>9} {'after':>9} {'must stay':>9} {'batches':>8} {'p50 ms':>7}"
    print(f"  {'detail':<12} {header} {'max ms':>7}")
    for what in RETAINED:
        c, t = counts[what], timings[what]
        ok = "ok" if c.after == c.within else "WRONG"
        print(
            f"  {what:<12} {c.before:>9,} {c.after:>9,} {c.within:>9,} {len(t):>8} "
            f"{statistics.median(t):7.1f} {max(t):7.1f}  {ok}"
        )
    spent = sum(sum(t) for t in timings.values()) / 1000
    print(
        f"  executor agents (with the dialogue): {agents:,} -> {agents_after:,}; "
        f"retention took {spent:.1f} s of statements"
    )
    print(f"  bytes per turn, {'table':<38} {'before':>8} {'after':>8}")
    for name in sorted(before, key=lambda n: -before[n]):
        if before[name] >= 64 * 1024 or after[name] >= 64 * 1024:
            print(f"  {'':15}{name:<38} {before[name] / turns:8.0f} {after[name] / turns:8.0f}")
    total_before, total_after = sum(before.values()), sum(after.values())
    print(
        f"  {'':15}{'all of Parley':<38} {total_before / turns:8.0f} {total_after / turns:8.0f}"
        f"   ({total_before / 2**20:,.0f} MiB -> {total_after / 2**20:,.0f} MiB)"
    )
    bound(turns, before, after, days, outside)


CLASS_OF_TABLE: dict[str, Retained] = {
    "agent_chat_messages": "dialogue",
    "agents": "dialogue",  # its executors
    "chat_messages": "tool_rounds",  # its tool rounds
    "parley_private.tool_call_receipts": "receipts",
    "agent_executions": "executions",
}
"""The table each kind of detail is deleted from (only that part of `agents`, `chat_messages`)."""


def bound(
    turns: int,
    before: dict[str, int],
    after: dict[str, int],
    days: dict[Retained, int],
    outside: dict[Retained, int],
) -> None:
    """What the settings bound a database to, from the parts measured here, and the turns a
    day whose year Supabase's plans hold. `outside`: turns whose detail of each kind went."""
    detail = dict.fromkeys(RETAINED, 0.0)  # bytes a turn of each kind of detail takes
    for table, what in CLASS_OF_TABLE.items():
        if outside[what]:
            detail[what] += (before[table] - after[table]) / outside[what]
    within = {what: turns - outside[what] for what in RETAINED}
    forever = (sum(after.values()) - sum(detail[w] * within[w] for w in RETAINED)) / turns
    parts = ", ".join(f"{w} {detail[w]:,.0f} B for {days[w]} d" for w in RETAINED)
    print(f"  a turn keeps {forever:,.0f} B for good; its detail: {parts}")
    for name, size in (("Free (500 MB)", FREE), ("Pro (8 GB included)", PRO)):
        # A year of n turns a day: 365 n turns kept for good, the last days[w] n of detail w.
        per_day = size / (365 * forever + sum(days[w] * detail[w] for w in RETAINED))
        print(f"  Supabase {name}: a year of ~{per_day:,.0f} turns a day fits")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--months", type=float, default=12)
    parser.add_argument("--batch-plans", type=int, default=200)
    report(parser.parse_args())


if __name__ == "__main__":
    main()
