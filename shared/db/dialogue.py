"""Repository: agent-to-agent threads (`agent_chat_sessions`) and their messages."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from shared.db._rows import fetch_all, fetch_one
from shared.db.database import Connection
from shared.db.records import AgentMessage, AgentMessageType, AgentThread, columns

THREAD = columns(AgentThread)
MESSAGE = columns(AgentMessage)


async def create_thread(
    conn: Connection,
    *,
    session_id: UUID,
    user_id: UUID,
    plan_id: UUID,
    parent_agent_id: UUID,
    child_agent_id: UUID,
    max_turns: int,
    step_id: UUID | None = None,
) -> AgentThread:
    """Open a planner↔executor thread."""
    return await fetch_one(
        conn,
        AgentThread,
        f"""INSERT INTO agent_chat_sessions
              (session_id, user_id, plan_id, step_id, parent_agent_id, child_agent_id, max_turns)
            VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {THREAD}""",
        (session_id, user_id, plan_id, step_id, parent_agent_id, child_agent_id, max_turns),
    )


async def list_threads(conn: Connection, *, plan_id: UUID) -> list[AgentThread]:
    """A plan's threads, oldest first."""
    return await fetch_all(
        conn,
        AgentThread,
        f"SELECT {THREAD} FROM agent_chat_sessions WHERE plan_id = %s ORDER BY created_at, id",
        (plan_id,),
    )


async def add_agent_message(
    conn: Connection,
    *,
    thread: AgentThread,
    message_type: AgentMessageType,
    content: str = "",
    sender_agent_id: UUID | None = None,
    receiver_agent_id: UUID | None = None,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
    tool_args: dict[str, Any] | None = None,
    model: str | None = None,
    reasoning_content: str | None = None,
) -> AgentMessage:
    """Append a dialogue message to `thread`; `seq` comes from the chat session's counter.
    (A call's usage is accounted on its execution, not here.)"""
    return await fetch_one(
        conn,
        AgentMessage,
        f"""INSERT INTO agent_chat_messages
              (agent_session_id, plan_id, session_id, user_id, sender_agent_id, receiver_agent_id,
               message_type, content, tool_name, tool_call_id, tool_args, model,
               reasoning_content)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
            RETURNING {MESSAGE}""",
        (
            thread.id,
            thread.plan_id,
            thread.session_id,
            thread.user_id,
            sender_agent_id,
            receiver_agent_id,
            message_type,
            content,
            tool_name,
            tool_call_id,
            Jsonb(tool_args) if tool_args is not None else None,
            model,
            reasoning_content,
        ),
    )


async def add_planner_denial(
    conn: Connection,
    *,
    plan_id: UUID,
    sender_agent_id: UUID | None,
    reason: str,
    tool_name: str,
    tool_call_id: str,
    tool_args: dict[str, Any],
) -> AgentMessage:
    """Record a refused tool call of the planner's own loop (no thread) as a dialogue row."""
    return await fetch_one(
        conn,
        AgentMessage,
        f"""INSERT INTO agent_chat_messages
              (plan_id, session_id, user_id, sender_agent_id, message_type, content,
               tool_name, tool_call_id, tool_args)
            SELECT p.id, p.session_id, p.user_id, %s, 'permission_denied', %s, %s, %s, %s
              FROM agent_plans p WHERE p.id = %s
            RETURNING {MESSAGE}""",
        (sender_agent_id, reason, tool_name, tool_call_id, Jsonb(tool_args), plan_id),
    )


async def list_thread_messages(conn: Connection, *, thread_id: UUID) -> list[AgentMessage]:
    """A thread's messages in order (found through its plan's: the index the dialogue has)."""
    return await fetch_all(
        conn,
        AgentMessage,
        f"""SELECT {MESSAGE} FROM agent_chat_messages
            WHERE plan_id = (SELECT plan_id FROM agent_chat_sessions WHERE id = %(thread)s)
              AND agent_session_id = %(thread)s
            ORDER BY seq""",
        {"thread": thread_id},
    )


async def list_plan_dialogue(conn: Connection, *, plan_id: UUID) -> list[AgentMessage]:
    """A plan's dialogue (every thread's messages, and the planner's denials) in order."""
    return await fetch_all(
        conn,
        AgentMessage,
        f"SELECT {MESSAGE} FROM agent_chat_messages WHERE plan_id = %s ORDER BY seq",
        (plan_id,),
    )


async def abandon_open_threads(
    conn: Connection, *, plan_id: UUID, error: str, step_id: UUID | None = None
) -> None:
    """Close every still-active thread of a plan (or of one of its steps) as `abandoned`
    (cancellation, failure)."""
    await conn.execute(
        """UPDATE agent_chat_sessions SET status = 'abandoned', error = %s, completed_at = now()
           WHERE plan_id = %s AND status = 'active' AND (%s::uuid IS NULL OR step_id = %s)""",
        (error, plan_id, step_id, step_id),
    )
