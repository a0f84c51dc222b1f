"""Retention: the sweeper deletes exactly the detail the settings no longer keep, and a session
read afterwards still renders — saying what was removed where it was.

Real turns of each kind (`tests.support.turn_kinds`) are run, then aged by moving when their plans
ended (`completed_at`, what retention goes by). Every row of every table is listed before and
after, so "nothing more" is checked against the whole database, not a guess at what could go.
The module has a database of its own (retention works on every plan in it); its fixture runs
the turns and retention once, and the tests read what happened.
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
from shared.agents import prompts
from shared.auth.access_tokens import User
from shared.db import Database
from shared.db.delegations import DIALOGUE
from shared.dispatch.in_process import run_turn
from shared.llm.tokens import DeepSeekTokenizer
from shared.usecases import chat_sessions, plan_views, transcripts
from shared.usecases.retention import apply_retention
from tests.support import databases
from tests.support.agent_services import services_on
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.turn_kinds import MESSAGES, Kind, script_turns

TABLES = (
    "chat_sessions",
    "chat_messages",
    "agents",
    "agent_plans",
    "agent_plan_steps",
    "agent_chat_sessions",
    "agent_chat_messages",
    "agent_executions",
    "agent_approvals",
    "parley_private.tool_call_receipts",
    "parley_private.agent_prompts",
    "tasks",
)
KEYS = {"parley_private.tool_call_receipts": "tool_call_id"}
SOURCES = {"agent_chat_messages": f"{DIALOGUE} d"}
"""The dialogue as its readers get it: its rows and the delegations the runs hold."""
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
            table: {
                row[0]
                for row in conn.execute(
                    f"SELECT {KEYS.get(table, 'id')} FROM {SOURCES.get(table, table)}"
                )
            }
            for table in TABLES
        }


def _ids(url: str, query: str, params: Any = None) -> set[Any]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute(query, params).fetchall()}


def _execute(url: str, query: str, params: Any = None) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(query, params)


def _gone(before: Rows, after: Rows) -> Rows:
    assert all(after[t] <= before[t] for t in TABLES)  # retention adds nothing
    return {t: before[t] - after[t] for t in TABLES if before[t] - after[t]}


def _detail(url: str, plans: list[UUID]) -> Rows:
    """The rows of `plans` that the dialogue, tool rounds and receipts settings cover."""
    return {
        "agent_chat_messages": _ids(
            url, f"SELECT id FROM {DIALOGUE} d WHERE plan_id = ANY(%s)", (plans,)
        ),
        "agents": _ids(
            url,
            "SELECT a.id FROM agents a JOIN agent_executions e ON e.agent_id = a.id "
            "WHERE e.plan_id = ANY(%s) AND a.role = 'executor'",
            (plans,),
        ),
        "chat_messages": _ids(
            url,
            "SELECT id FROM chat_messages WHERE plan_id = ANY(%s) "
            "AND (role = 'tool' OR tool_calls IS NOT NULL)",
            (plans,),
        ),
        "parley_private.tool_call_receipts": _ids(
            url,
            "SELECT tool_call_id FROM parley_private.tool_call_receipts WHERE plan_id = ANY(%s)",
            (plans,),
        ),
    }


def _runs(url: str, plans: list[UUID]) -> set[Any]:
    return _ids(url, "SELECT id FROM agent_executions WHERE plan_id = ANY(%s)", (plans,))


def _threads(url: str, plans: list[UUID]) -> set[Any]:
    """The plans' threads (each held by its step attempt's run: they go with the runs)."""
    return _ids(url, "SELECT id FROM agent_chat_sessions WHERE plan_id = ANY(%s)", (plans,))


@dataclass
class World:
    """A user's turns of every kind, some ended long ago; what retention found and did."""

    url: str
    user: UUID
    plans: dict[str, UUID]
    sessions: list[UUID]
    expected: Rows
    """The old turns' dialogue, tool rounds and receipts, before retention."""
    kept_runs: set[Any]
    kept_threads: set[Any]
    gone: Rows
    deleted: dict[str, int]
    again: dict[str, int]
    """What a second run deleted (nothing: caught up)."""
    runs_gone: Rows
    """What a run with `RETENTION_EXECUTIONS_DAYS=30` then deleted."""

    @property
    def as_user(self) -> User:
        return User(id=self.user, claims={"sub": str(self.user), "role": "authenticated"})

    @property
    def old(self) -> list[UUID]:
        return [self.plans[k] for k in ("tool", "complex", "direct")]


@pytest.fixture(scope="module")
async def world(
    db: Database,
    database_url: str,
    fake: FakeModelServer,
    models_file: Path,
    tokenizer: DeepSeekTokenizer,
) -> AsyncIterator[World]:
    """In one session: a tool, a complex and a direct turn that ended 40 days ago, and a
    complex turn that ended yesterday; in a second session, a complex turn that ended 35 days
    ago but is still leased, and one waiting for the user's approval for 100 days. Then
    retention with the default settings (in batches of two turns), again, and with the runs'
    detail kept 30 days."""
    async with services_on(db, database_url, fake, models_file, tokenizer) as services:
        script_turns(fake)
        user = await make_user(db)
        plans: dict[str, UUID] = {}

        async def turn(name: str, kind: Kind, session: UUID | None) -> UUID:
            done = await run_turn(
                services(),
                user_id=user,
                session_id=session,
                message=MESSAGES[kind],
                publisher=InMemoryPublisher(),
            )
            assert done.plan.status == "completed"
            plans[name] = done.started.plan_id
            return done.started.session_id

        first = await turn("tool", "tool", None)
        await turn("complex", "complex", first)
        await turn("direct", "direct", first)
        await turn("recent", "complex", first)
        second = await turn("leased", "complex", None)
        await turn("waiting", "complex", second)
        for name, days in {
            "tool": 40,
            "complex": 40,
            "direct": 40,
            "recent": 1,
            "leased": 35,
        }.items():
            _execute(
                database_url,
                "UPDATE agent_plans SET completed_at = now() - %s WHERE id = %s",
                (timedelta(days=days), plans[name]),
            )
        _execute(
            database_url,
            "UPDATE agent_plans SET lease_owner = 'a run', "
            "lease_expires_at = now() + interval '1 hour' WHERE id = %s",
            (plans["leased"],),
        )
        _execute(
            database_url,
            "UPDATE agent_plans SET status = 'awaiting_approval', completed_at = NULL, "
            "created_at = now() - interval '100 days' WHERE id = %s",
            (plans["waiting"],),
        )
        old = [plans[k] for k in ("tool", "complex", "direct")]
        expected, kept_runs = _detail(database_url, old), _runs(database_url, old)
        kept_threads = _threads(database_url, old)
        before = _rows(database_url)
        deleted = await apply_retention(services(retention_batch_plans=2))
        after = _rows(database_url)
        again = await apply_retention(services())
        await apply_retention(services(retention_executions_days=30))
        yield World(
            database_url,
            user,
            plans,
            [first, second],
            expected,
            kept_runs,
            kept_threads,
            _gone(before, after),
            deleted,
            again,
            _gone(after, _rows(database_url)),
        )


def test_retention_deletes_exactly_the_detail_the_settings_no_longer_keep(world: World) -> None:
    assert all(world.expected.values())  # each kind of detail was there to be deleted
    assert world.gone == world.expected  # the old turns' detail, nothing of anything else
    assert world.deleted == {
        "dialogue": sum(len(world.expected[t]) for t in ("agent_chat_messages", "agents")),
        "tool_rounds": len(world.expected["chat_messages"]),
        "receipts": len(world.expected["parley_private.tool_call_receipts"]),
    }
    assert world.again == {}  # caught up: nothing left to delete


def test_the_runs_detail_goes_when_its_own_setting_says(world: World) -> None:
    assert world.kept_runs and world.kept_threads  # kept 90 days by default
    assert world.kept_threads < world.kept_runs  # the step attempts' (not the planner's own)
    assert world.runs_gone == {
        "agent_executions": world.kept_runs,
        "agent_chat_sessions": world.kept_threads,  # a thread is its run's
    }


def test_turns_running_waiting_leased_or_recent_are_never_touched(world: World) -> None:
    for name in ("leased", "waiting", "recent"):
        plan = [world.plans[name]]
        detail = _detail(world.url, plan)
        assert detail["agent_chat_messages"] and _threads(world.url, plan), name
        assert _runs(world.url, plan), name
    with psycopg.connect(world.url) as conn:
        before_leased = conn.execute(
            "SELECT m.removed_through < p.completed_at FROM parley_private.retention_marks m, "
            "agent_plans p WHERE m.what = 'dialogue' AND p.id = %s",
            (world.plans["leased"],),
        ).fetchone()
    assert before_leased == (True,)  # the leased plan stopped the batch before it


async def test_a_session_read_after_retention_renders_and_says_what_was_removed(
    db: Database, world: World
) -> None:
    user, session, plans = world.as_user, world.sessions[0], world.plans

    page = await chat_sessions.list_sessions(db, user)
    assert {s.id for s in page.sessions} == set(world.sessions)

    messages = await chat_sessions.list_messages(db, user, session)
    assert [m.role for m in messages.messages] == ["user", "assistant"] * 4  # all the words
    assert messages.removed == []
    internal = await chat_sessions.list_messages(db, user, session, internal=True)
    assert {(r.plan_id, r.what) for r in internal.removed} == {  # a direct turn had none
        (plans[k], "tool_rounds") for k in ("tool", "complex")
    }
    assert {m.plan_id for m in internal.messages if m.role == "tool"} == {plans["recent"]}

    timeline = await chat_sessions.timeline(db, user, session)
    assert {e.plan_id for e in timeline.entries if e.source == "agent"} == {plans["recent"]}
    noted = {(r.plan_id, r.what) for r in timeline.removed}
    assert (plans["complex"], "dialogue") in noted and (plans["tool"], "tool_rounds") in noted
    assert {r.plan_id for r in timeline.removed} <= set(world.old)
    note = next(r for r in timeline.removed if r.what == "dialogue")
    assert note.kept_days == 30 and "RETENTION_DIALOGUE_DAYS" in note.note

    complex_ = await plan_views.plan_detail(db, user, plans["complex"])
    assert complex_.threads == [] and complex_.executions == []
    assert len(complex_.steps) == 3 and all(step.result for step in complex_.steps)
    assert complex_.cost_usd > 0  # the totals stay on the plan
    assert {r.what for r in complex_.removed} == {"dialogue", "tool_rounds", "executions"}
    assert (await plan_views.plan_detail(db, user, plans["recent"])).removed == []

    text = await transcripts.plan_transcript(db, user, plans["complex"])
    assert "- Removed: The agents' dialogue of this turn" in text
    assert "## Request" in text and "## Assistant message" in text  # the request, the answer


def test_each_system_prompt_is_stored_once_for_all_the_agents_given_it(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        bodies = {row[0] for row in conn.execute("SELECT body FROM parley_private.agent_prompts")}
        named = conn.execute(
            "SELECT role, count(*), count(DISTINCT prompt_id) FROM agents GROUP BY role "
            "ORDER BY role"
        ).fetchall()
    assert bodies == {prompts.PLANNER, prompts.EXECUTOR}  # 2 rows for 2 sessions' agents
    assert named == [("executor", 9, 1), ("planner", 2, 1)]  # the executors of 3 kept turns
