"""Wire models of sessions, messages and the timeline."""

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from shared.db.records import AgentMessageType, AgentRole, MessageRole, Retained
from shared.kernel.text import StoredText


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class SessionCreate(BaseModel):
    """Start a chat session."""

    model_config = ConfigDict(extra="forbid")

    title: StoredText | None = Field(default=None, min_length=1, max_length=200)


class SessionUpdate(BaseModel):
    """Rename a session and/or archive or restore it."""

    model_config = ConfigDict(extra="forbid")

    title: StoredText | None = Field(default=None, min_length=1, max_length=200)
    status: Literal["active", "archived"] | None = None


class ForkRequest(BaseModel):
    """Fork a session at one of its messages."""

    model_config = ConfigDict(extra="forbid")

    at_message_id: UUID
    title: StoredText | None = Field(default=None, min_length=1, max_length=200)


class SessionOut(_Out):
    """A chat session with its running totals."""

    id: UUID
    title: str
    status: Literal["active", "archived"]
    forked_from_session_id: UUID | None
    forked_at_message_id: UUID | None
    last_seq: int
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    last_message_at: datetime | None
    created_at: datetime
    updated_at: datetime


class SessionList(BaseModel):
    """A page of the user's sessions, most recently active first."""

    sessions: list[SessionOut]
    next_cursor: str | None = Field(
        description="Pass it as `cursor` for the next page; null: this is the last page."
    )


class MessageOut(_Out):
    """A message of the user-facing conversation."""

    id: UUID
    session_id: UUID
    seq: int
    role: MessageRole
    content: str
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    tool_name: str | None
    plan_id: UUID | None
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    client_message_id: str | None
    created_at: datetime


class RemovedDetail(BaseModel):
    """Detail of a turn that retention deleted (docs/storage.md): what it was, and a note
    saying so, to show where it was."""

    plan_id: UUID
    what: Retained = Field(
        description="`dialogue`: the agents' messages; `tool_rounds`: the planner's tool "
        "calls and their results; `executions`: the runs' detail and the steps' threads; "
        "`receipts`: the write receipts."
    )
    kept_days: int | None = Field(description="Days it was kept after the turn ended.")
    note: str


class MessageList(BaseModel):
    messages: list[MessageOut]
    last_seq: int = Field(description="The highest `seq` returned (or `after_seq` if none).")
    removed: list[RemovedDetail] = Field(
        default=[],
        description="With `include=internal`: the planner's tool rounds that retention deleted "
        "of the turns these messages belong to (none of them is among the messages).",
    )


class TimelineEntryOut(_Out):
    """A human or agent message in the session's single `seq` order."""

    seq: int
    source: Literal["chat", "agent"]
    message_id: UUID
    kind: MessageRole | AgentMessageType = Field(
        description="Chat role (`source: chat`), or the agent message type (`agent`)."
    )
    sender_role: MessageRole | AgentRole = Field(
        description="The chat role, or the sending agent's role (`system`: no agent)."
    )
    agent_id: UUID | None
    thread_id: UUID | None = Field(
        description="The agent thread (`GET /plans/{id}`'s `threads[].id`) of an agent message."
    )
    plan_id: UUID | None
    content: str
    tool_name: str | None
    model: str | None
    prompt_tokens: int | None = Field(
        description="A chat message's tokens in; null for an agent message, whose model call is "
        "accounted on its run (`GET /plans/{id}`'s `executions`)."
    )
    completion_tokens: int | None = Field(description="Tokens out; null as `prompt_tokens`.")
    cost_usd: Decimal | None = Field(description="Cost; null as `prompt_tokens`.")
    created_at: datetime


class Timeline(BaseModel):
    entries: list[TimelineEntryOut]
    last_seq: int
    removed: list[RemovedDetail] = Field(
        default=[],
        description="What retention deleted of the turns these entries belong to (their "
        "agents' dialogue, the planner's tool rounds): none of it is among the entries.",
    )
