"""`python3 dev.py run` (python -m local) migrates, seeds and summarises; twice is harmless."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import date

import pytest
from alembic.script import ScriptDirectory

from local.migrate import alembic_config, upgrade
from local.seed import DEMO_USER_ID, seed_demo
from shared.db import Database
from tests import databases


@pytest.fixture
def empty_database(server_url: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=None)
    yield url
    databases.drop_database(server_url, url)


def test_run_command_is_repeatable(empty_database: str) -> None:
    env = {**os.environ, "DATABASE_URL": empty_database}
    outputs = [
        subprocess.run(
            [sys.executable, "-m", "local"], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1]
    assert "3 projects · 7 tasks · 3 notes · 2 brain dumps · 4 calendar events" in outputs[0]
    head = ScriptDirectory.from_config(alembic_config(empty_database)).get_current_head()
    assert f"schema      {head} on PostgreSQL" in outputs[0]


async def test_seed_is_idempotent(server_url: str, template_name: str) -> None:
    url = databases.create_database(server_url, template=template_name)
    try:
        upgrade(url)  # already at head: a no-op
        async with Database(url) as db:
            first = await seed_demo(db, today=date(2026, 1, 5))
            second = await seed_demo(db, today=date(2026, 2, 9))
            async with db.as_user(DEMO_USER_ID, read_only=True) as conn:
                cur = await conn.execute("SELECT min(start_at) AS first FROM calendar_events")
                row = await cur.fetchone()
    finally:
        databases.drop_database(server_url, url)
    assert first == second
    assert sum(first.counts.values()) == 19
    assert row is not None and row["first"].date() == date(2026, 1, 6)
