"""Repository: agent instances (planner and executors)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from shared.db._rows import fetch_one, fetch_optional
from shared.db.database import Connection
from shared.db.prompt_store import STORE_PROMPT, prompt_params
from shared.db.records import Agent, AgentPermissions, AgentRole, AgentStatus, columns

AGENT = columns(Agent)


async def create_agent(
    conn: Connection,
    *,
    user_id: UUID,
    chat_session_id: UUID,
    role: AgentRole,
    name: str,
    model: str,
    permissions: AgentPermissions,
    token_budget: int,
    allowed_tools: Sequence[str] | None = None,
    parent_agent_id: UUID | None = None,
    system_prompt: str | None = None,
) -> Agent:
    """Create an agent row: the row, not the caller, decides later what the agent may do.
    Its system prompt is stored once (`shared.db.prompt_store`), in the same statement."""
    return await fetch_one(
        conn,
        Agent,
        f"""WITH {STORE_PROMPT}
            INSERT INTO agents (user_id, chat_session_id, role, name, model, permissions,
                                token_budget, allowed_tools, parent_agent_id, prompt_id)
            VALUES (%(user)s, %(session)s, %(role)s, %(name)s, %(model)s, %(permissions)s,
                    %(budget)s, %(tools)s, %(parent)s, %(prompt_id)s)
            RETURNING {AGENT}""",
        {
            "user": user_id,
            "session": chat_session_id,
            "role": role,
            "name": name,
            "model": model,
            "permissions": permissions,
            "budget": token_budget,
            "tools": list(allowed_tools) if allowed_tools is not None else None,
            "parent": parent_agent_id,
            **prompt_params(system_prompt),
        },
    )


async def get_agent(conn: Connection, *, agent_id: UUID) -> Agent | None:
    """The agent row as it is now (permission checks re-read it at every call)."""
    return await fetch_optional(
        conn, Agent, f"SELECT {AGENT} FROM agents WHERE id = %s", (agent_id,)
    )


async def set_agent_status(conn: Connection, *, agent_id: UUID, status: AgentStatus) -> None:
    """Move an agent to `status`; `completed`/`failed` stamp `completed_at`."""
    await conn.execute(
        """UPDATE agents SET status = %(status)s,
               completed_at = CASE WHEN %(status)s IN ('completed', 'failed') THEN now() END
           WHERE id = %(id)s""",
        {"status": status, "id": agent_id},
    )


async def set_allowed_tools(
    conn: Connection, *, agent_id: UUID, allowed_tools: Sequence[str] | None
) -> None:
    """Narrow (or widen, with None) the tools an agent may call; effective on its next call."""
    await conn.execute(
        "UPDATE agents SET allowed_tools = %s WHERE id = %s",
        (list(allowed_tools) if allowed_tools is not None else None, agent_id),
    )
