"""Builders that keep test bodies short."""

from __future__ import annotations

from uuid import UUID, uuid4

from shared.db import Database, agents, chats, dialogue, plans, users
from shared.db.records import AgentThread, ChatSession


async def make_user(db: Database, *, email: str | None = None) -> UUID:
    user_id = uuid4()
    async with db.service() as conn:
        await users.ensure_user(conn, user_id=user_id, email=email or f"{user_id}@test.local")
    return user_id


async def make_session(db: Database, user_id: UUID, *, title: str = "Test chat") -> ChatSession:
    async with db.service() as conn:
        return await chats.create_session(conn, user_id=user_id, title=title)


async def make_thread(db: Database, user_id: UUID) -> AgentThread:
    """A planner↔executor thread (with its session, user message, agents and plan)."""
    session = await make_session(db, user_id)
    async with db.service() as conn:
        message, _ = await chats.add_user_message(
            conn, session_id=session.id, user_id=user_id, content="Plan something"
        )
        planner = await agents.create_agent(
            conn, user_id=user_id, chat_session_id=session.id, role="planner", name="planner",
            model="test-model", permissions="read_write", token_budget=10_000,
        )  # fmt: skip
        executor = await agents.create_agent(
            conn, user_id=user_id, chat_session_id=session.id, role="executor", name="executor",
            model="test-model", permissions="read_only", token_budget=1_000,
            parent_agent_id=planner.id,
        )  # fmt: skip
        plan, _ = await plans.create_plan(
            conn, session_id=session.id, user_id=user_id, user_message_id=message.id,
            planner_agent_id=planner.id,
        )  # fmt: skip
        return await dialogue.create_thread(
            conn, session_id=session.id, user_id=user_id, plan_id=plan.id,
            parent_agent_id=planner.id, child_agent_id=executor.id, max_turns=5,
        )  # fmt: skip
