"""RLS: user A can neither see nor change user B's rows, in every user-owned table."""

from __future__ import annotations

from uuid import UUID

import psycopg
import pytest
from psycopg import sql

from shared.db import Database
from tests.support.factories import make_user, make_world

TABLES = [
    "chat_sessions",
    "chat_messages",
    "agents",
    "agent_plans",
    "agent_plan_steps",
    "agent_chat_sessions",
    "agent_chat_messages",
    "agent_executions",
    "agent_approvals",
    "projects",
    "tasks",
    "notes",
    "brain_dumps",
    "calendar_events",
]
DOMAIN = ["projects", "tasks", "notes", "brain_dumps", "calendar_events"]
# A column every table has that a policy-abiding UPDATE could touch.
TOUCH = {"chat_sessions": "title"} | {t: "created_at" for t in TABLES if t != "chat_sessions"}
REFUSED = (
    psycopg.errors.InsufficientPrivilege,
    psycopg.errors.ObjectNotInPrerequisiteState,  # a view no one writes (the runs' threads)
)


@pytest.fixture(scope="module")
async def worlds(db: Database) -> tuple[UUID, dict[str, UUID], UUID, dict[str, UUID]]:
    a, b = await make_user(db), await make_user(db)
    return a, await make_world(db, a), b, await make_world(db, b)


def _q(template: str, table: str) -> sql.Composed:
    return sql.SQL(template).format(sql.Identifier(table), sql.Identifier(TOUCH[table]))


@pytest.mark.parametrize("table", TABLES)
async def test_only_own_rows_are_visible(db: Database, worlds, table: str) -> None:
    a, mine, _, theirs = worlds
    async with db.as_user(a) as conn:
        cur = await conn.execute(_q("SELECT id FROM {}", table))
        visible = {row["id"] for row in await cur.fetchall()}
    assert mine[table] in visible
    assert theirs[table] not in visible


@pytest.mark.parametrize("table", TABLES)
async def test_cannot_update_or_delete_others_rows(db: Database, worlds, table: str) -> None:
    a, _, _, theirs = worlds
    for statement in ("UPDATE {0} SET {1} = {1} WHERE id = %s", "DELETE FROM {} WHERE id = %s"):
        try:
            async with db.as_user(a) as conn:
                cur = await conn.execute(_q(statement, table), (theirs[table],))
                assert cur.rowcount == 0
        except REFUSED:
            pass  # no privilege at all is an even firmer no
    async with db.service() as conn:
        cur = await conn.execute(
            _q("SELECT count(*) AS n FROM {} WHERE id = %s", table), (theirs[table],)
        )
        assert await cur.fetchone() == {"n": 1}


INSERTS = {
    "chat_sessions": "INSERT INTO chat_sessions (user_id, title) VALUES (%(b)s, 'x')",
    "chat_messages": "INSERT INTO chat_messages (session_id, user_id, role, content) "
    "VALUES (%(session)s, %(b)s, 'user', 'x')",
    "agents": "INSERT INTO agents (user_id, chat_session_id, role, name, model, permissions, "
    "token_budget) VALUES (%(b)s, %(session)s, 'executor', 'x', 'm', 'read_only', 10)",
    "projects": "INSERT INTO projects (user_id, name) VALUES (%(b)s, 'x')",
    "tasks": "INSERT INTO tasks (user_id, title) VALUES (%(b)s, 'x')",
    "notes": "INSERT INTO notes (user_id, content) VALUES (%(b)s, 'x')",
    "brain_dumps": "INSERT INTO brain_dumps (user_id, content) VALUES (%(b)s, 'x')",
    "calendar_events": "INSERT INTO calendar_events (user_id, title, start_at, end_at) "
    "VALUES (%(b)s, 'x', now(), now() + interval '1 hour')",
}


@pytest.mark.parametrize("table", sorted(INSERTS))
async def test_insert_claiming_another_user_is_refused(db: Database, worlds, table: str) -> None:
    a, _, b, theirs = worlds
    with pytest.raises((psycopg.errors.InsufficientPrivilege,), match=r"row-level security|denied"):
        async with db.as_user(a) as conn:
            await conn.execute(INSERTS[table], {"b": b, "session": theirs["chat_sessions"]})


@pytest.mark.parametrize("table", DOMAIN)
async def test_user_manages_own_domain_rows(db: Database, worlds, table: str) -> None:
    a, mine, *_ = worlds
    async with db.as_user(a) as conn:
        cur = await conn.execute(
            _q("UPDATE {0} SET {1} = now() WHERE id = %s", table), (mine[table],)
        )
        assert cur.rowcount == 1
        await conn.execute(INSERTS[table].replace("%(b)s", "auth.uid()"), {})


async def test_cannot_link_to_another_users_project(db: Database, worlds) -> None:
    a, _, _, theirs = worlds
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        async with db.as_user(a) as conn:
            await conn.execute(
                "INSERT INTO tasks (user_id, project_id, title) VALUES (auth.uid(), %s, 'x')",
                (theirs["projects"],),
            )


async def test_timeline_view_applies_rls(db: Database, worlds) -> None:
    a, mine, _, theirs = worlds
    async with db.as_user(a) as conn:
        cur = await conn.execute("SELECT DISTINCT session_id FROM session_timeline")
        sessions = {row["session_id"] for row in await cur.fetchall()}
    assert sessions == {mine["chat_sessions"]}
    assert theirs["chat_sessions"] not in sessions


async def test_operator_views_are_closed_to_users(db: Database, worlds) -> None:
    a, *_ = worlds
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        async with db.as_user(a) as conn:
            await conn.execute("SELECT * FROM execution_stats_daily")
