"""Builders that keep test bodies short."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID, uuid4

from shared.db import Database, agents, chats, dialogue, plans, users
from shared.db.database import Connection
from shared.db.records import Agent, AgentThread, ChatSession, DialogueEntry


async def add_planner(
    conn: Connection,
    user_id: UUID,
    session_id: UUID,
    *,
    model: str = "deepseek-chat",
    token_budget: int = 8000,
    name: str = "planner",
) -> Agent:
    """The session's planner row (`read_write`)."""
    return await agents.create_agent(
        conn,
        user_id=user_id,
        chat_session_id=session_id,
        role="planner",
        name=name,
        model=model,
        permissions="read_write",
        token_budget=token_budget,
    )


async def make_user(db: Database, *, email: str | None = None) -> UUID:
    user_id = uuid4()
    async with db.service() as conn:
        await users.ensure_user(conn, user_id=user_id, email=email or f"{user_id}@test.local")
    return user_id


async def make_session(db: Database, user_id: UUID, *, title: str = "Test chat") -> ChatSession:
    async with db.service() as conn:
        return await chats.create_session(conn, user_id=user_id, title=title)


async def add_exchanges(
    db: Database, session: ChatSession, pairs: Sequence[tuple[str, str]]
) -> None:
    """Earlier turns of `session`: each (question, answer) stored as the user's message and the
    planner's answer, in order."""
    async with db.service() as conn:
        session_id, user_id = session.id, session.user_id
        for question, answer in pairs:
            await chats.add_message(
                conn, session_id=session_id, user_id=user_id, role="user", content=question
            )
            await chats.add_message(
                conn,
                session_id=session_id,
                user_id=user_id,
                role="assistant",
                content=answer,
                metadata={"kind": "answer"},
            )


async def make_world(db: Database, user_id: UUID) -> dict[str, UUID]:
    """One row in every user-owned table for `user_id`; returns table → row id."""
    from shared.db import approvals, dialogue, executions, plans

    ids: dict[str, UUID] = {}
    async with db.service() as conn:
        session = await chats.create_session(conn, user_id=user_id, title="world")
        message = await chats.add_message(
            conn, session_id=session.id, user_id=user_id, role="user", content="hi"
        )
        planner = await add_planner(conn, user_id, session.id)
        plan, _ = await plans.create_plan(
            conn,
            session_id=session.id,
            user_id=user_id,
            user_message_id=message.id,
            planner_agent_id=planner.id,
            strategy="complex",
        )
        (step,) = await plans.add_steps(
            conn,
            plan_id=plan.id,
            user_id=user_id,
            steps=[plans.NewStep(1, "look things up", executor_required=True)],
        )
        thread = await dialogue.create_thread(
            conn,
            session_id=session.id,
            user_id=user_id,
            plan_id=plan.id,
            parent_agent_id=planner.id,
            child_agent_id=planner.id,
            max_turns=4,
            step_id=step.id,
        )
        said = await dialogue.add_agent_message(
            conn, DialogueEntry("delegation", "go"), plan_id=plan.id, thread_id=thread.id
        )
        execution, _ = await executions.start_execution(
            conn,
            user_id=user_id,
            plan_id=plan.id,
            agent_id=planner.id,
            agent_role="planner",
            model="deepseek-chat",
            step_id=step.id,
        )
        approval, _ = await approvals.request_approval(
            conn,
            plan_id=plan.id,
            step_id=None,
            agent_id=planner.id,
            kind="tool_call",
            tool_call_id="call-1",
            tool_name="delete_note",
            tool_args={"note_id": "x"},
        )
        ids.update(
            chat_sessions=session.id,
            chat_messages=message.id,
            agents=planner.id,
            agent_plans=plan.id,
            agent_plan_steps=step.id,
            agent_chat_sessions=thread.id,
            agent_chat_messages=said.id,
            agent_executions=execution.id,
            agent_approvals=approval.id,
        )
        for table, sql_ in DOMAIN_INSERTS.items():
            cur = await conn.execute(sql_, {"user": user_id, **ids})
            row = await cur.fetchone()
            assert row is not None
            ids[table] = row["id"]
    return ids


DOMAIN_INSERTS = {
    "projects": "INSERT INTO projects (user_id, name) VALUES (%(user)s, 'p') RETURNING id",
    "tasks": "INSERT INTO tasks (user_id, project_id, title) "
    "VALUES (%(user)s, %(projects)s, 't') RETURNING id",
    "notes": "INSERT INTO notes (user_id, content) VALUES (%(user)s, 'n') RETURNING id",
    "brain_dumps": "INSERT INTO brain_dumps (user_id, content) VALUES (%(user)s, 'b') RETURNING id",
    "calendar_events": "INSERT INTO calendar_events (user_id, task_id, title, start_at, end_at) "
    "VALUES (%(user)s, %(tasks)s, 'e', now(), now() + interval '1 hour') RETURNING id",
}


async def make_thread(db: Database, user_id: UUID) -> AgentThread:
    """A planner↔executor thread (with its session, user message, agents and plan)."""
    session = await make_session(db, user_id)
    async with db.service() as conn:
        message, _ = await chats.add_user_message(
            conn, session_id=session.id, user_id=user_id, content="Plan something"
        )
        planner = await agents.create_agent(
            conn,
            user_id=user_id,
            chat_session_id=session.id,
            role="planner",
            name="planner",
            model="test-model",
            permissions="read_write",
            token_budget=10_000,
        )
        executor = await agents.create_agent(
            conn,
            user_id=user_id,
            chat_session_id=session.id,
            role="executor",
            name="executor",
            model="test-model",
            permissions="read_only",
            token_budget=1_000,
            parent_agent_id=planner.id,
        )
        plan, _ = await plans.create_plan(
            conn,
            session_id=session.id,
            user_id=user_id,
            user_message_id=message.id,
            planner_agent_id=planner.id,
        )
        return await dialogue.create_thread(
            conn,
            session_id=session.id,
            user_id=user_id,
            plan_id=plan.id,
            parent_agent_id=planner.id,
            child_agent_id=executor.id,
            max_turns=5,
        )
