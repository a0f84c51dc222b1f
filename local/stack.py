"""`python3 dev.py run`: bring up the local stack and show what is there.

Database: `DATABASE_URL` if set, otherwise the embedded Postgres (database `parley`). Then
migrate to head, seed the demo user's data, and print a summary.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from local import migrate
from local.postgres import start_embedded, with_database
from local.seed import SeedSummary, seed_demo
from shared.db import Database
from shared.settings import Settings, load_settings

LOCAL_DATABASE = "parley"


@dataclass(frozen=True, slots=True)
class LocalDatabase:
    url: str
    embedded: bool


def prepare_database(settings: Settings) -> LocalDatabase:
    """The configured database, or the embedded one with a `parley` database created in it."""
    if settings.database_url:
        return LocalDatabase(settings.database_url, embedded=False)
    server = start_embedded(settings.parley_data_dir)
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (LOCAL_DATABASE,)
        ).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(LOCAL_DATABASE)))
    return LocalDatabase(with_database(server, LOCAL_DATABASE), embedded=True)


async def seed(url: str) -> tuple[SeedSummary, str]:
    async with Database(url) as db, db.service() as conn:
        cur = await conn.execute("SELECT version_num FROM alembic_version")
        head = await cur.fetchone()
        cur = await conn.execute("SHOW server_version")
        version = await cur.fetchone()
    async with Database(url) as db:
        summary = await seed_demo(db)
    assert head is not None and version is not None
    return summary, f"{head['version_num']} on PostgreSQL {version['server_version']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 dev.py run", description=__doc__)
    parser.add_argument("--data-dir", type=Path, help="local state folder (default .parley)")
    args = parser.parse_args(argv)
    settings = load_settings(**({"parley_data_dir": args.data_dir} if args.data_dir else {}))

    database = prepare_database(settings)
    migrate.upgrade(database.url)
    summary, schema = asyncio.run(seed(database.url))

    kind = "embedded" if database.embedded else "DATABASE_URL"
    counts = " · ".join(f"{n} {table.replace('_', ' ')}" for table, n in summary.counts.items())
    print("Parley local stack")
    print(f"  database    {database.url}  ({kind})")
    print(f"  schema      {schema}")
    print(f"  demo user   {summary.email}  {summary.user_id}")
    print(f"  demo data   {counts}")
    return 0
