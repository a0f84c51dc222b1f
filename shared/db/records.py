"""Rows as named tuples, one per table; field names are the column names.

Named tuples rather than frozen dataclasses: as immutable, and a cold start makes each class in
~0.1 ms where a frozen, slotted dataclass takes ~1 ms (it compiles six methods from source) —
the chat function imports all nine. Each row is built by `tuple.__new__`, so fetching many rows
is faster too. `row._replace(…)` makes a changed copy. (No `from __future__ import annotations`
here: `NamedTuple` would compile each field's annotation string at class creation.)

The `Literal` sets mirror the tables' CHECK constraints.
"""

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, NamedTuple
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
Retained = Literal["dialogue", "tool_rounds", "receipts", "executions"]
"""The kinds of a turn's detail that retention deletes (`shared.usecases.retention`)."""


def columns(record: type[Any]) -> str:
    """The comma-separated column list of a record type, for SELECT and RETURNING."""
    names: tuple[str, ...] = record._fields  # a named tuple's, in declaration order
    return ", ".join(names)


class ChatSession(NamedTuple):
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


class ChatMessage(NamedTuple):
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


class Agent(NamedTuple):
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
    prompt_id: UUID | None
    """The system prompt it was given (`parley_private.agent_prompts`, stored once)."""
    status: AgentStatus
    created_at: datetime
    completed_at: datetime | None


class Plan(NamedTuple):
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
    started_at: datetime | None
    completed_at: datetime | None
    lease_owner: str | None
    """The invocation running the plan now, while `lease_expires_at` is in the future."""
    lease_expires_at: datetime | None
    decisions: int
    """Approvals decided so far (a run that saw fewer goes on instead of waiting)."""
    trace_id: str | None = None
    """The OpenTelemetry trace of the turn that created it (None: tracing was off)."""


class PlanStep(NamedTuple):
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
    started_at: datetime | None
    completed_at: datetime | None
    lease_owner: str | None
    """The invocation running the step now, while `lease_expires_at` is in the future."""
    lease_expires_at: datetime | None
    dispatched_at: datetime | None
    """When the planner handed the step to an executor without waiting (a queue message)."""


class AgentThread(NamedTuple):
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
    error: str | None
    created_at: datetime
    completed_at: datetime | None


class DialogueEntry(NamedTuple):
    """What a new `agent_chat_messages` row says; its ids and number come from where it is
    written (`Transition.agent_message` in a run's statement, `dialogue.add_agent_message`
    on its own)."""

    message_type: AgentMessageType
    content: str = ""
    sender_agent_id: UUID | None = None
    receiver_agent_id: UUID | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_args: dict[str, Any] | None = None
    model: str | None = None
    reasoning_content: str | None = None


class AgentMessage(NamedTuple):
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
    """A call's arguments (None for a control call whose only argument is `content`:
    `shared.agents.history`)."""
    model: str | None
    """The model whose call wrote the row: set on the first row of a call's turn (the call's
    tokens and cost are on its execution)."""
    reasoning_content: str | None
    """A thinking model's reasoning for the assistant turn this row starts."""
    created_at: datetime


class Execution(NamedTuple):
    """An `agent_executions` row: one agent run with its accounting."""

    id: UUID
    user_id: UUID
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
    trace_id: str | None = None
    """The OpenTelemetry trace of the invocation that opened the run (None: tracing off)."""


class Approval(NamedTuple):
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
