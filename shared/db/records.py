"""Rows as frozen dataclasses, one per table; field names are the column names.

The `Literal` sets mirror the tables' CHECK constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal
from uuid import UUID

SessionStatus = Literal["active", "archived", "deleted"]
MessageRole = Literal["user", "assistant", "system", "status", "tool"]
AgentRole = Literal["planner", "executor"]
AgentPermissions = Literal["read_only", "read_write"]
AgentStatus = Literal["active", "idle", "completed", "failed"]
PlanStrategy = Literal["direct", "tool", "complex"]
PlanStatus = Literal[
    "pending", "executing", "awaiting_approval", "completed", "failed", "cancelled"
]
StepStatus = Literal[
    "pending", "running", "awaiting_approval", "completed", "failed", "skipped", "cancelled"
]
ThreadStatus = Literal["active", "completed", "failed", "abandoned", "timeout"]
AgentMessageType = Literal[
    "delegation",
    "question",
    "answer",
    "status",
    "completion",
    "error",
    "escalation",
    "tool_call",
    "tool_result",
    "permission_denied",
]
ExecutionStatus = Literal["pending", "running", "completed", "failed", "timeout", "cancelled"]
ApprovalKind = Literal["tool_call", "escalation"]
ApprovalStatus = Literal["pending", "approved", "rejected", "answered", "cancelled"]


def columns(record: type[Any]) -> str:
    """The comma-separated column list of a record type, for SELECT and RETURNING."""
    return ", ".join(f.name for f in fields(record))


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of one or more LLM calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cache_hit_tokens + other.cache_hit_tokens,
            self.cost_usd + other.cost_usd,
        )

    def json(self) -> dict[str, Any]:
        """As rows' JSON and events carry it (the cost as a decimal string: exact)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hit_tokens": self.cache_hit_tokens,
            "cost_usd": format(self.cost_usd, "f"),  # never exponent notation ("0E-8")
        }


@dataclass(frozen=True, slots=True)
class ChatSession:
    id: UUID
    user_id: UUID
    title: str
    status: SessionStatus
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
    first_client_message_id: str | None
    """The `client_message_id` of the message that created the session (sent without one)."""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    id: UUID
    session_id: UUID
    user_id: UUID
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
    metadata: dict[str, Any]
    reasoning_content: str | None
    """A thinking model's reasoning for this assistant turn (sent back on tool-call turns)."""
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Agent:
    id: UUID
    user_id: UUID
    chat_session_id: UUID
    parent_agent_id: UUID | None
    role: AgentRole
    name: str
    model: str
    permissions: AgentPermissions
    allowed_tools: list[str] | None
    token_budget: int
    system_prompt: str | None
    status: AgentStatus
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True, slots=True)
class Plan:
    id: UUID
    session_id: UUID
    user_id: UUID
    user_message_id: UUID
    planner_agent_id: UUID
    strategy: PlanStrategy | None
    status: PlanStatus
    goal: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    cancel_requested_at: datetime | None
    """Set when a cancel was requested; agents stop at their next check."""
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    lease_owner: str | None
    """The invocation running the plan now, while `lease_expires_at` is in the future."""
    lease_expires_at: datetime | None
    decisions: int
    """Approvals decided so far (a run that saw fewer goes on instead of waiting)."""
    trace_id: str | None = None
    """The OpenTelemetry trace of the turn that created it (None: tracing was off)."""


@dataclass(frozen=True, slots=True)
class PlanStep:
    id: UUID
    plan_id: UUID
    user_id: UUID
    step_number: int
    description: str
    executor_required: bool
    depends_on: list[int]
    tools: list[str]
    assigned_agent_id: UUID | None
    status: StepStatus
    result: str | None
    error: str | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    lease_owner: str | None
    """The invocation running the step now, while `lease_expires_at` is in the future."""
    lease_expires_at: datetime | None
    dispatched_at: datetime | None
    """When the planner handed the step to an executor without waiting (a queue message)."""


@dataclass(frozen=True, slots=True)
class AgentThread:
    """An `agent_chat_sessions` row: one planner↔executor conversation about one step."""

    id: UUID
    session_id: UUID
    user_id: UUID
    plan_id: UUID
    step_id: UUID | None
    parent_agent_id: UUID
    child_agent_id: UUID
    status: ThreadStatus
    turn_count: int
    max_turns: int
    result: str | None
    error: str | None
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True, slots=True)
class AgentMessage:
    """An `agent_chat_messages` row: one message of the agent dialogue."""

    id: UUID
    agent_session_id: UUID | None
    """The thread; None only for a denial in the planner's own tool loop (it has no thread)."""
    plan_id: UUID
    session_id: UUID
    user_id: UUID
    seq: int
    sender_agent_id: UUID | None
    receiver_agent_id: UUID | None
    message_type: AgentMessageType
    content: str
    tool_name: str | None
    tool_call_id: str | None
    tool_args: dict[str, Any] | None
    tool_result: Any
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    reasoning_content: str | None
    """A thinking model's reasoning for the assistant turn this row starts."""
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Execution:
    """An `agent_executions` row: one agent run with its accounting."""

    id: UUID
    user_id: UUID
    session_id: UUID
    plan_id: UUID
    step_id: UUID | None
    agent_id: UUID
    agent_session_id: UUID | None
    agent_role: AgentRole
    model: str
    attempt: int
    status: ExecutionStatus
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    tool_call_count: int
    permission_denials: int
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    error: str | None
    created_at: datetime
    updated_at: datetime
    trace_id: str | None = None
    """The OpenTelemetry trace of the invocation that opened the run (None: tracing off)."""


@dataclass(frozen=True, slots=True)
class Approval:
    """An `agent_approvals` row: a destructive call or an escalation waiting for the user."""

    id: UUID
    plan_id: UUID
    session_id: UUID
    user_id: UUID
    step_id: UUID | None
    """None for the planner's own tool loop."""
    agent_id: UUID
    kind: ApprovalKind
    tool_call_id: str
    tool_name: str | None
    """The destructive tool (`tool_call`; `escalate` for an escalation)."""
    tool_args: dict[str, Any] | None
    reason: str | None
    """What the agent asks the user (`escalation`)."""
    status: ApprovalStatus
    response: str | None
    """The user's answer to an escalation, or their reason for a rejection."""
    decided_at: datetime | None
    created_at: datetime
    updated_at: datetime
