"""Deleted sessions go for good: `RETENTION_DELETED_SESSIONS_DAYS` after a user deleted a
session, the sweeper deletes it with every row of it, in batches — and nothing else.

Real turns (`tests.support.turn_kinds`) are run in several sessions of one user, some sessions
are deleted through the use case and aged (their `updated_at`: when they were deleted), then
retention runs once with batches of one turn. Every row of every table is listed before and
after, so "nothing else" is checked against the whole database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest

from local.deepseek import FakeModelServer
from shared.auth.access_tokens import User
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.llm.tokens import DeepSeekTokenizer
from shared.usecases import chat_sessions
from shared.usecases.retention import apply_retention
from tests.support import databases
from tests.support.agent_services import services_on
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.turn_kinds import MESSAGES, Kind, script_turns

# Each table, and how a row of it belongs to a session (through its plan, for some).
OF_SESSION = {
    "chat_sessions": "SELECT id FROM chat_sessions WHERE id = %(s)s",
    "chat_messages": "SELECT id FROM chat_messages WHERE session_id = %(s)s",
    "agents": "SELECT id FROM agents WHERE chat_session_id = %(s)s",
    "agent_plans": "SELECT id FROM agent_plans WHERE session_id = %(s)s",
    "agent_plan_steps": "SELECT s.id FROM agent_plan_steps s JOIN agent_plans p "
    "ON p.id = s.plan_id WHERE p.session_id = %(s)s",
    "agent_chat_messages": "SELECT id FROM agent_chat_messages WHERE session_id = %(s)s",
    "agent_executions": "SELECT e.id FROM agent_executions e JOIN agent_plans p "
    "ON p.id = e.plan_id WHERE p.session_id = %(s)s",
    "agent_approvals": "SELECT a.id FROM agent_approvals a JOIN agent_plans p "
    "ON p.id = a.plan_id WHERE p.session_id = %(s)s",
    "parley_private.tool_call_receipts": "SELECT r.tool_call_id FROM "
    "parley_private.tool_call_receipts r JOIN agent_plans p ON p.id = r.plan_id "
    "WHERE p.session_id = %(s)s",
    "parley_private.plan_rollup_steps": "SELECT r.plan_id FROM parley_private.plan_rollup_steps r "
    "JOIN agent_plans p ON p.id = r.plan_id WHERE p.session_id = %(s)s",
}
KEYS = {
    "parley_private.tool_call_receipts": "tool_call_id",
    "parley_private.plan_rollup_steps": "plan_id",
}
ALSO = ("tasks", "parley_private.agent_prompts")  # the user's data and shared rows: untouched
DASHBOARDS = (
    "SELECT * FROM execution_stats_daily ORDER BY 1, 2, 3",
    "SELECT * FROM plan_outcomes_daily ORDER BY 1, 2",
)
Rows = dict[str, set[Any]]


@pytest.fixture(scope="module")
def database_url(server_url: str, template_name: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=template_name)
    yield url
    databases.drop_checked(server_url, url)


@pytest.fixture(scope="module")
async def db(database_url: str) -> AsyncIterator[Database]:
    async with Database(database_url, max_size=4) as database:
        yield database


def _rows(url: str) -> Rows:
    """The id (or key) of every row of every table, per table."""
    with psycopg.connect(url) as conn:
        return {
            table: {row[0] for row in conn.execute(f"SELECT {KEYS.get(table, 'id')} FROM {table}")}
            for table in (*OF_SESSION, *ALSO)
        }


def _of_session(url: str, session: UUID) -> Rows:
    with psycopg.connect(url) as conn:
        found = {
            table: {row[0] for row in conn.execute(query, {"s": session})}
            for table, query in OF_SESSION.items()
        }
    return {table: ids for table, ids in found.items() if ids}


def _dashboards(url: str) -> list[list[Any]]:
    with psycopg.connect(url) as conn:
        return [conn.execute(query).fetchall() for query in DASHBOARDS]


def _execute(url: str, query: str, params: Any = None) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(query, params)


def _backdate(url: str, session: UUID, ago: timedelta) -> None:
    """Make the session's deletion `ago` old (its `updated_at`, which a trigger sets to now on
    every update: held off for this one)."""
    with psycopg.connect(url) as conn:
        conn.execute("ALTER TABLE chat_sessions DISABLE TRIGGER chat_sessions_updated_at")
        conn.execute(
            "UPDATE chat_sessions SET updated_at = now() - %s WHERE id = %s", (ago, session)
        )
        conn.execute("ALTER TABLE chat_sessions ENABLE TRIGGER chat_sessions_updated_at")


@dataclass
class World:
    """Sessions of one user, some deleted long ago; what one retention run did."""

    url: str
    user: User
    sessions: dict[str, UUID]
    expected: Rows
    """The rows of the session deleted long ago, before retention."""
    gone: Rows
    deleted: dict[str, int]
    again: dict[str, int]
    dashboards: tuple[list[list[Any]], list[list[Any]]]
    """The dashboards' rows before and after."""


@pytest.fixture(scope="module")
async def world(
    db: Database,
    database_url: str,
    fake: FakeModelServer,
    models_file: Path,
    tokenizer: DeepSeekTokenizer,
) -> AsyncIterator[World]:
    """`old`: a tool and a complex turn, deleted 40 days ago, and a fork made of it; `recent`:
    deleted yesterday; `kept`: not deleted; `leased`: deleted 40 days ago, but a run still
    holds its turn. Then retention with the defaults, in batches of one turn, and again."""
    async with services_on(db, database_url, fake, models_file, tokenizer) as services:
        script_turns(fake)
        user_id = await make_user(db)
        user = User(id=user_id, claims={"sub": str(user_id), "role": "authenticated"})

        async def turn(kind: Kind, session: UUID | None = None) -> UUID:
            done = await run_turn(
                services(),
                user_id=user_id,
                session_id=session,
                message=MESSAGES[kind],
                publisher=InMemoryPublisher(),
            )
            assert done.plan.status == "completed"
            return done.started.session_id

        sessions = {"old": await turn("tool")}
        await turn("complex", sessions["old"])
        first_answer = (await chat_sessions.list_messages(db, user, sessions["old"])).messages[1]
        fork = await chat_sessions.fork_session(
            db, user, sessions["old"], at_message_id=first_answer.id
        )
        sessions |= {"fork": fork.id, "recent": await turn("direct"), "kept": await turn("direct")}
        sessions["leased"] = await turn("complex")
        for name, days in {"old": 40, "recent": 1, "leased": 40}.items():
            await chat_sessions.delete_session(services(), user, sessions[name])
            _backdate(database_url, sessions[name], timedelta(days=days))
        _execute(
            database_url,
            "UPDATE agent_plans SET lease_owner = 'a run', "
            "lease_expires_at = now() + interval '1 hour' WHERE session_id = %s",
            (sessions["leased"],),
        )
        expected = _of_session(database_url, sessions["old"])
        before, charts = _rows(database_url), _dashboards(database_url)
        deleted = await apply_retention(services(retention_batch_plans=1))
        after = _rows(database_url)
        again = await apply_retention(services())
        yield World(
            database_url,
            user,
            sessions,
            expected,
            {t: before[t] - after[t] for t in before if before[t] - after[t]},
            deleted,
            again,
            (charts, _dashboards(database_url)),
        )


def test_a_session_deleted_long_ago_goes_with_every_row_of_it_and_nothing_else(
    world: World,
) -> None:
    there = {"agent_chat_messages", "agent_executions", "parley_private.tool_call_receipts"}
    assert there <= set(world.expected)  # a tool turn's write, a complex turn's dialogue
    assert world.gone == world.expected
    assert world.deleted == {"deleted_turns": 2, "deleted_sessions": 1}  # a turn a batch
    assert world.again == {}


def test_sessions_deleted_lately_or_with_a_turn_held_are_kept(world: World) -> None:
    for name in ("recent", "leased", "kept", "fork"):
        assert _of_session(world.url, world.sessions[name])["chat_sessions"], name


async def test_a_fork_of_a_purged_session_still_renders(db: Database, world: World) -> None:
    fork = await chat_sessions.get_session(db, world.user, world.sessions["fork"])
    assert fork.forked_from_session_id is None and fork.forked_at_message_id is None
    messages = await chat_sessions.list_messages(db, world.user, fork.id)
    assert [m.role for m in messages.messages] == ["user", "assistant"]


def test_the_dashboards_keep_what_the_purged_turns_counted(world: World) -> None:
    before, after = world.dashboards
    assert before == after and all(before)
