"""Bounded storage (revision 5a0c1e2b0702): prompts stored once, an upgrade that keeps a
deployment's data, and every index listed in docs/storage.md with the query it serves."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from types import ModuleType
from uuid import UUID, uuid4

import psycopg
import pytest

from local.migrate import downgrade, upgrade
from shared.db.prompt_store import prompt_id
from tests.support import ROOT, databases

DOCS = ROOT / "docs" / "storage.md"
BEFORE = "5a0c1e2b0701"
DOMAIN = ("projects", "tasks", "notes", "brain_dumps", "calendar_events")
ROLLUPS = (
    "execution_rollup",
    "plan_rollup",
    "plan_rollup_steps",
    "execution_stats_settled",
    "plan_outcomes_settled",
    "alembic_version",
)


def _revision() -> ModuleType:
    (path,) = (ROOT / "migrations" / "versions").glob("*-5a0c1e2b0702_*.py")
    spec = importlib.util.spec_from_file_location("bounded_storage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def empty_database(server_url: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=None)
    yield url
    databases.drop_database(server_url, url)


@pytest.mark.parametrize("body", ["You are Parley's planner.", "Ünïcode — and\nlines", ""])
def test_a_prompts_id_is_the_same_hash_in_python_and_in_sql(database_url: str, body: str) -> None:
    expression = _revision().PROMPT_ID.format(body="%s::text")
    with psycopg.connect(database_url) as conn:
        row = conn.execute(f"SELECT {expression}", (body,)).fetchone()
    assert row == (prompt_id(body),)


AGENT = """INSERT INTO public.agents (id, user_id, chat_session_id, role, name, model,
    permissions, token_budget, system_prompt) VALUES (%s, %s, %s, %s, 'a', 'm', %s, 1000, %s)"""


def test_an_upgrade_moves_the_prompts_out_of_the_agents_and_back(empty_database: str) -> None:
    """A deployment with agents in place: each distinct prompt is stored once, every agent
    names its own; a downgrade gives each agent its text again."""
    url = empty_database
    upgrade(url, BEFORE)
    user, session = uuid4(), uuid4()
    texts = ("planner prompt", "executor prompt", "executor prompt", None)
    prompts: dict[UUID, str | None] = {uuid4(): text for text in texts}
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO auth.users (id) VALUES (%s)", (user,))
        conn.execute("INSERT INTO chat_sessions (id, user_id) VALUES (%s, %s)", (session, user))
        for n, (agent, text) in enumerate(prompts.items()):
            role, permissions = ("planner", "read_write") if n == 0 else ("executor", "read_only")
            conn.execute(AGENT, (agent, user, session, role, permissions, text))
    upgrade(url)
    with psycopg.connect(url) as conn:
        stored: dict[object, object] = dict(
            conn.execute("SELECT id, body FROM parley_private.agent_prompts").fetchall()
        )
        named: dict[object, object] = dict(
            conn.execute("SELECT id, prompt_id FROM agents").fetchall()
        )
    assert stored == {prompt_id(t): t for t in ("planner prompt", "executor prompt")}
    assert named == {a: prompt_id(t) if t is not None else None for a, t in prompts.items()}
    downgrade(url, BEFORE)
    with psycopg.connect(url) as conn:
        restored: dict[object, object] = dict(
            conn.execute("SELECT id, system_prompt FROM agents").fetchall()
        )
    assert restored == prompts


def _documented() -> set[str]:
    """The index names docs/storage.md lists as kept, with a query each."""
    table = DOCS.read_text().split("## Indexes, each with the query it serves", 1)[1]
    table = table.split("\nDropped:", 1)[0]
    names = set()
    for line in table.splitlines():
        if line.startswith("| `"):  # (not the domain tables' and the rollups' rows)
            names |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return names


def test_every_index_is_listed_with_its_query(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        indexes = {
            name
            for name, table in conn.execute(
                """SELECT i.relname, t.relname FROM pg_index x
                   JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
                   WHERE t.relnamespace = ANY(ARRAY['public', 'parley_private']::regnamespace[])"""
            ).fetchall()
            if table not in DOMAIN + ROLLUPS
        }
    assert indexes == _documented()
