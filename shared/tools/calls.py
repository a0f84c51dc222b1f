"""A tool call as the model made it, and the context the agent core makes it in."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from shared.db.records import AgentThread


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call from an assistant message, untouched."""

    id: str
    """The provider's call id (the `tool` message answering it must carry it)."""
    name: str
    arguments: str
    """The raw JSON argument string, exactly as the model produced it."""


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling, for whom, and where to record what happens. Built by the agent core.

    Only `agent_id` and `user_id` take part in the permission decision (through the agent row
    read at call time); `thread` and `execution_id` only say where denials and counts go.
    """

    agent_id: UUID
    """The calling agent; its `agents` row is re-read at every call."""
    user_id: UUID
    """The user the agent acts for: tools see this user's rows only (RLS)."""
    thread: AgentThread | None = None
    """The planner↔executor thread to record `permission_denied` messages in. None in the
    planner's own tool loop: denials are then recorded as thread-less rows of `plan_id`."""
    plan_id: UUID | None = None
    """The plan the call belongs to (where a denial outside any thread is recorded)."""
    execution_id: UUID | None = None
    """The `agent_executions` row that counts this agent's tool calls and permission denials."""
