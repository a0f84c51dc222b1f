"""Wire models of turns: sending a message, and reading the plans that answer it (their steps,
threads, executions and approvals). The planner's and executor's own routes' models are in
`shared.wire.runs`: the chat function never loads them."""

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue

from shared.db.records import (
    AgentRole,
    ApprovalStatus,
    ExecutionStatus,
    PlanStatus,
    PlanStrategy,
    StepStatus,
    ThreadStatus,
)
from shared.kernel.text import NOT_BLANK, NotBlank, StoredText
from shared.wire.sessions import RemovedDetail, _Out

STREAM_WITHOUT_WAITING: dict[str, JsonValue] = {
    "required": ["stream", "wait"],
    "properties": {"stream": {"const": True}, "wait": {"const": False}},
}
"""`stream: true` answers while the turn runs: it cannot also answer at once (`wait: false`)."""


class ChatTurnRequest(BaseModel):
    """Send the user's message to the planner."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"not": STREAM_WITHOUT_WAITING})

    session_id: UUID | None = Field(default=None, description="Omit to start a new session.")
    message: Annotated[StoredText, NotBlank] = Field(
        min_length=1,
        max_length=32_000,
        json_schema_extra=NOT_BLANK,
        description="Not only whitespace; at most 32,000 characters, and at most half the "
        "planner's token budget (12,000 tokens by default): a longer message is refused with "
        "422, nothing stored.",
    )
    client_message_id: StoredText | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Your id for this send: a retry with the same id and message returns the "
        "original turn instead of storing the message twice (and runs or announces nothing "
        "again); the same id with another message is a 422.",
    )
    stream: bool = Field(
        default=False, description="Answer with server-sent events instead of one JSON body."
    )
    wait: bool | None = Field(
        default=None,
        description="false: answer 202 Accepted as soon as the message is stored and the turn "
        "handed to the planner (watch Realtime for the rest); true: answer when the turn ends. "
        "Unset: the header `Prefer: respond-async` asks for 202; otherwise the deployment's "
        "default — 202 with INVOKER_TRANSPORT=sqs (AWS), waiting elsewhere.",
    )


class ChatTurnReply(BaseModel):
    """Where the turn ended (or paused); everything is also in the session's tables."""

    session_id: UUID
    message_id: UUID = Field(description="The stored user message.")
    plan_id: UUID
    created: bool = Field(description="False when `client_message_id` matched an earlier send.")
    status: PlanStatus = Field(description="The plan's status: completed, failed, cancelled, …")
    strategy: PlanStrategy | None
    answer: str | None
    answer_message_id: UUID | None
    error: str | None
    running_elsewhere: bool = Field(
        default=False,
        description="The turn is still being worked on by another invocation (a resend).",
    )


class TurnWatch(BaseModel):
    """Where to follow a turn that was accepted (202)."""

    realtime_channel: str = Field(
        description="The session's Realtime channel (`session:<session_id>`): every event of "
        "the turn, ending with `done`."
    )
    private: bool = Field(
        description="Join it as a private channel (`config: {private: true}`) with the "
        "user's access token."
    )
    plan: str = Field(
        description="GET this (the agent_planner function) for the plan with its steps, "
        "threads and executions; its `status` ends completed, failed or cancelled."
    )
    messages: str = Field(
        description="GET this (the chat function, as absolute as the URL the send reached) "
        "for the session's messages: the answer once the turn ends."
    )


class ChatTurnAccepted(BaseModel):
    """202 Accepted: the message is stored and the turn handed to the planner; it runs on."""

    session_id: UUID
    message_id: UUID = Field(description="The stored user message.")
    plan_id: UUID
    created: bool = Field(description="False when `client_message_id` matched an earlier send.")
    status: PlanStatus = Field(
        description="The plan's status now: pending, executing, … (or how a resent turn ended)."
    )
    watch: TurnWatch


class StepOut(_Out):
    id: UUID
    step_number: int
    description: str
    executor_required: bool
    depends_on: list[int]
    tools: list[str]
    assigned_agent_id: UUID | None
    status: StepStatus
    result: str | None
    error: str | None
    started_at: datetime | None
    completed_at: datetime | None


class ThreadOut(_Out):
    """One planner↔executor conversation (an `agent_chat_sessions` row)."""

    id: UUID
    step_id: UUID | None
    parent_agent_id: UUID
    child_agent_id: UUID
    status: ThreadStatus
    turn_count: int
    max_turns: int
    result: str | None
    error: str | None
    created_at: datetime
    completed_at: datetime | None


class ExecutionOut(_Out):
    """One agent run with its accounting."""

    id: UUID
    step_id: UUID | None
    agent_id: UUID
    thread_id: UUID | None = Field(
        validation_alias=AliasChoices("thread_id", "agent_session_id"),
        description="The step's thread (`threads[].id`; the `agent_chat_sessions` row).",
    )
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
    trace_id: str | None = Field(
        description="The OpenTelemetry trace of the invocation that opened the run (null: "
        "tracing was off); look it up in the tracing backend.",
    )


class ApprovalOut(_Out):
    """A destructive tool call or an executor's escalation that waits for (or got) the user's
    decision."""

    id: UUID
    plan_id: UUID
    step_id: UUID | None
    agent_id: UUID
    kind: Literal["tool_call", "escalation"]
    tool_call_id: str
    tool_name: str | None
    tool_args: dict[str, Any] | None
    reason: str | None
    status: ApprovalStatus
    response: str | None
    decided_at: datetime | None
    created_at: datetime


class PlanDetail(_Out):
    """A plan with its steps, threads and executions."""

    id: UUID
    session_id: UUID
    user_message_id: UUID
    strategy: PlanStrategy | None
    status: PlanStatus
    goal: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int
    cost_usd: Decimal
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    trace_id: str | None = Field(
        description="The OpenTelemetry trace of the turn that created the plan (null: tracing "
        "was off): from a failed plan to what its functions did (docs/observability.md).",
    )
    steps: list[StepOut]
    threads: list[ThreadOut]
    executions: list[ExecutionOut]
    approvals: list[ApprovalOut]
    removed: list[RemovedDetail] = Field(
        default=[],
        description="What retention deleted of this turn, with a note to show in its place: "
        "`dialogue` (its `threads` are gone with the agents' messages), `executions` (its "
        "`executions`: the plan keeps the totals), `tool_rounds` (the planner's tool calls).",
    )


class PlanList(BaseModel):
    """A page of a session's plans, in the order of the messages they answer."""

    plans: list[PlanDetail]
    last_seq: int = Field(
        description="The `seq` of the last plan's user message: `after_seq` for the next page."
    )
