"""Builders for tool tests: domain rows, a planner/executor crew, and tool calls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from psycopg import sql

from shared.db import Database, agents, chats, dialogue, executions, plans
from shared.db.records import Agent, AgentThread, Execution
from shared.tools import CallContext, ToolCall, ToolExecutor, ToolResult, TurnCache
from tests.support.factories import add_planner, make_session, make_user

DOMAIN_TABLES = ("projects", "tasks", "notes", "brain_dumps", "calendar_events")

BASE = datetime(2030, 6, 3, tzinfo=UTC)
"""A Monday, far from now, so test calendars never meet real dates."""


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """BASE + `day` days at `hour:minute` UTC."""
    return BASE + timedelta(days=day, hours=hour, minutes=minute)


async def insert(db: Database, table: str, user_id: UUID, **fields: Any) -> UUID:
    """One row of `table` owned by `user_id`, inserted as the service; returns its id."""
    fields = {"user_id": user_id, **fields}
    query = sql.SQL("INSERT INTO {} ({}) VALUES ({}) RETURNING id").format(
        sql.Identifier(table),
        sql.SQL(", ").join(sql.Identifier(k) for k in fields),
        sql.SQL(", ").join(sql.Placeholder(k) for k in fields),
    )
    async with db.service() as conn:
        cur = await conn.execute(query, fields)
        row = await cur.fetchone()
    assert row is not None
    return UUID(str(row["id"]))


async def make_project(db: Database, user_id: UUID, **fields: Any) -> UUID:
    return await insert(db, "projects", user_id, **{"name": "Project", **fields})


async def make_task(db: Database, user_id: UUID, **fields: Any) -> UUID:
    return await insert(db, "tasks", user_id, **{"title": "Task", **fields})


async def make_note(db: Database, user_id: UUID, **fields: Any) -> UUID:
    return await insert(db, "notes", user_id, **{"content": "Note text", **fields})


async def make_brain_dump(db: Database, user_id: UUID, **fields: Any) -> UUID:
    return await insert(db, "brain_dumps", user_id, **{"content": "Thoughts", **fields})


async def make_event(
    db: Database, user_id: UUID, start: datetime, minutes: int = 60, **fields: Any
) -> UUID:
    end = start + timedelta(minutes=minutes)
    values = {"title": "Event", "start_at": start, "end_at": end, **fields}
    return await insert(db, "calendar_events", user_id, **values)


async def snapshot(db: Database) -> dict[str, list[dict[str, Any]]]:
    """Every row of every domain table (all users), for before/after comparisons."""
    tables: dict[str, list[dict[str, Any]]] = {}
    async with db.service() as conn:
        for table in DOMAIN_TABLES:
            cur = await conn.execute(
                sql.SQL("SELECT * FROM {} ORDER BY id").format(sql.Identifier(table))
            )
            tables[table] = list(await cur.fetchall())
    return tables


@dataclass(frozen=True)
class Crew:
    """A user with a session, a planner, an executor, their thread and the executor's run."""

    user_id: UUID
    planner: Agent
    executor: Agent
    thread: AgentThread
    execution: Execution

    def as_planner(self, *, thread: bool = False) -> CallContext:
        return CallContext(
            agent_id=self.planner.id,
            user_id=self.user_id,
            thread=self.thread if thread else None,
        )

    def as_executor(self) -> CallContext:
        return CallContext(
            agent_id=self.executor.id,
            user_id=self.user_id,
            thread=self.thread,
            execution_id=self.execution.id,
        )


async def make_crew(
    db: Database, user_id: UUID | None = None, *, executor_tools: list[str] | None = None
) -> Crew:
    user = user_id or await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        message = await chats.add_message(
            conn, session_id=session.id, user_id=user, role="user", content="plan my week"
        )
        planner = await add_planner(
            conn, user, session.id, model="planner-model", token_budget=10_000
        )
        plan, _ = await plans.create_plan(
            conn,
            session_id=session.id,
            user_id=user,
            user_message_id=message.id,
            planner_agent_id=planner.id,
            strategy="complex",
        )
        executor = await agents.create_agent(
            conn,
            user_id=user,
            chat_session_id=session.id,
            role="executor",
            name="executor",
            model="executor-model",
            permissions="read_only",
            token_budget=2_000,
            allowed_tools=executor_tools,
            parent_agent_id=planner.id,
        )
        thread = await dialogue.create_thread(
            conn,
            session_id=session.id,
            user_id=user,
            plan_id=plan.id,
            parent_agent_id=planner.id,
            child_agent_id=executor.id,
            max_turns=6,
        )
        execution, _ = await executions.start_execution(
            conn,
            user_id=user,
            plan_id=plan.id,
            agent_id=executor.id,
            agent_role="executor",
            model="executor-model",
            agent_session_id=thread.id,
        )
    return Crew(user, planner, executor, thread, execution)


@dataclass(frozen=True)
class Outcome:
    """A `ToolResult` whose payload tests may index freely (it is JSON they just produced)."""

    result: ToolResult

    @property
    def payload(self) -> Any:
        return self.result.payload

    @property
    def error(self) -> str | None:
        return self.result.error

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def call_id(self) -> str:
        return self.result.call_id

    @property
    def repeat_of(self) -> str | None:
        return self.result.repeat_of

    def content(self) -> str:
        return self.result.content()


async def call(
    executor: ToolExecutor,
    context: CallContext,
    name: str,
    turn: TurnCache | None = None,
    *,
    raw: str | None = None,
    **arguments: Any,
) -> Outcome:
    """Run one tool call as the model would make it (arguments as a JSON string)."""
    tool_call = ToolCall(
        id=f"call_{uuid4().hex[:12]}",
        name=name,
        arguments=raw if raw is not None else json.dumps(arguments, default=str),
    )
    turn = turn if turn is not None else TurnCache()
    return Outcome(await executor.execute(tool_call, context=context, turn=turn))


async def execution_row(db: Database, execution_id: UUID) -> Execution:
    async with db.service() as conn:
        found = await executions.get_execution(conn, execution_id=execution_id)
    assert found is not None
    return found


async def fetch_row(db: Database, table: str, row_id: UUID) -> dict[str, Any]:
    """One domain row by id, read as the service."""
    async with db.service() as conn:
        cur = await conn.execute(
            sql.SQL("SELECT * FROM {} WHERE id = %s").format(sql.Identifier(table)), (row_id,)
        )
        row = await cur.fetchone()
    assert row is not None
    return dict(row)
