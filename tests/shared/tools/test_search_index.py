"""The search tools reach the trigram indexes, although they run as the user under RLS.

Under RLS a non-LEAKPROOF predicate like `ILIKE` never becomes an index condition, so each
search goes through `<table>_matching(pattern)`, a SECURITY DEFINER lookup (migration
5e7a2b9c0101). These tests show both halves on 3000 rows per table, one holding the word:
the tool's own query (as the user, read-only) fetches the lookup's ids by primary key, and
the lookup's query (as its owner, with the user's claims) is answered from the trigram index.

The GIN pending list is flushed first (autovacuum does that in production): while fresh rows
sit in it, the planner rightly prices the trigram index high.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from psycopg import sql

from shared.db import Database
from shared.tools.builtin import brain_dumps, notes, projects, tasks
from tests.support.factories import make_user

ROWS = 3000
WORD = "zebra"

SEEDS = {
    "projects": ("name", "description"),
    "tasks": ("title", "description"),
    "notes": ("title", "content"),
    "brain_dumps": ("title", "content"),
}

Build = Callable[[str], tuple[sql.Composed, dict[str, Any]]]
CASES: dict[str, Build] = {
    "projects": lambda q: projects.search_query(projects.SearchProjectsArgs(query=q)),
    "tasks": lambda q: tasks.list_query(tasks.ListTasksArgs(query=q)),
    "notes": lambda q: notes.search_query(notes.SearchNotesArgs(query=q)),
    "brain_dumps": lambda q: brain_dumps.search_query(brain_dumps.SearchBrainDumpsArgs(query=q)),
}


@pytest.fixture(scope="module")
async def searcher(db: Database) -> UUID:
    user = await make_user(db)
    async with db.service() as conn:
        for table, (title, text) in SEEDS.items():
            seed = sql.SQL(
                """INSERT INTO {table} (user_id, {title}, {text})
                   SELECT %(user)s, 'row ' || i,
                          CASE i WHEN 7 THEN 'the zebra plan' ELSE md5(i::text) END
                   FROM generate_series(1, %(n)s) i"""
            ).format(
                table=sql.Identifier(table), title=sql.Identifier(title), text=sql.Identifier(text)
            )
            await conn.execute(seed, {"user": user, "n": ROWS})
            await conn.execute(
                "SELECT gin_clean_pending_list(%s::regclass)", (f"{table}_search_idx",)
            )
            await conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    return user


async def explain(conn: Any, query: sql.Composable, params: Any) -> str:
    cur = await conn.execute(sql.SQL("EXPLAIN (VERBOSE) ") + query, params)
    return "\n".join(str(row["QUERY PLAN"]) for row in await cur.fetchall())


@pytest.mark.parametrize("table", list(CASES))
async def test_the_tool_query_looks_up_matching_ids_by_primary_key(
    db: Database, searcher: UUID, table: str
) -> None:
    query, params = CASES[table](WORD.title())
    async with db.as_user(searcher, read_only=True) as conn:
        plan = await explain(conn, query, params)
        found = await conn.execute(query, params)
        rows = await found.fetchall()
    assert f"{table}_matching('%Zebra%'::text)" in plan, plan
    assert f"Index Scan on {table}_pkey" in plan, plan  # by id, from the lookup's array
    assert "Seq Scan" not in plan and f"{table}_user_idx" not in plan, plan
    assert len(rows) == 1


@pytest.mark.parametrize("table", list(CASES))
async def test_the_lookup_is_answered_from_the_trigram_index(
    db: Database, searcher: UUID, table: str
) -> None:
    async with db.service() as conn:  # as the function's owner, like SECURITY DEFINER
        cur = await conn.execute(
            "SELECT prosrc FROM pg_proc WHERE proname = %s", (f"{table}_matching",)
        )
        row = await cur.fetchone()
        assert row is not None and row["prosrc"].rstrip().endswith("ILIKE pattern")
        body = row["prosrc"].rstrip().removesuffix("pattern") + "%(pattern)s"
        claims = json.dumps({"sub": str(searcher), "role": "authenticated"})
        await conn.execute("SELECT set_config('request.jwt.claims', %s, true)", (claims,))
        plan = await explain(conn, sql.SQL(body), {"pattern": f"%{WORD}%"})
        cur = await conn.execute(sql.SQL(body), {"pattern": f"%{WORD}%"})
        ids = await cur.fetchall()
    assert f"Bitmap Index Scan on {table}_search_idx" in plan, plan
    assert len(ids) == 1


async def test_the_lookup_returns_only_the_callers_own_ids(db: Database, searcher: UUID) -> None:
    other = await make_user(db)
    async with db.service() as conn:
        await conn.execute(
            "INSERT INTO notes (user_id, content) VALUES (%s, 'a zebra of my own')", (other,)
        )
    async with db.as_user(other, read_only=True) as conn:
        cur = await conn.execute("SELECT parley_private.notes_matching('%%zebra%%') AS id")
        mine = await cur.fetchall()
    async with db.service() as conn:
        cur = await conn.execute("SELECT user_id FROM notes WHERE id = %s", (mine[0]["id"],))
        owner = await cur.fetchone()
        cur = await conn.execute(
            "SELECT has_function_privilege("
            "'anon', 'parley_private.notes_matching(text)', 'EXECUTE') AS ok"
        )
        anon = await cur.fetchone()
    assert len(mine) == 1 and owner is not None and owner["user_id"] == other
    assert anon is not None and anon["ok"] is False
