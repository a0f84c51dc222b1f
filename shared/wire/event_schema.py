"""What each event type carries, as pydantic models: the source of the events' JSON Schema.

`shared.events.Event` is the one shape every event has on the wire; its `data` depends on its
`type`. The models here say how, one per type (`StatusUpdateEvent`, `TokenEvent`, …), joined
in `AnyEvent` by `type`. From them come the JSON Schema the chat function serves
(`GET /schemas/events.json`, `events_json_schema`) and the `Event` schemas in every function's
OpenAPI document (`openapi_components`); `docs/events.md` explains the types in prose, and
`tests/events/test_schema.py` holds every event the test suite sends against that schema.

Every key of a `data` listed here is always present — null where it does not apply — so a
typed client never has to tell a missing key from a null one. Keys may be added; a client
ignores those it does not know.

Loaded on demand (the schema route, OpenAPI): sending events never needs these models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

from shared.db.records import AgentMessageType, PlanStatus, PlanStrategy, StepStatus, ThreadStatus
from shared.tools.results import ToolErrorCode
from shared.wire.turns import ApprovalOut

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_PATH = "/schemas/events.json"
"""Where the chat function serves the events' JSON Schema."""

Money = Annotated[
    str,
    Field(pattern=r"^-?[0-9]+(\.[0-9]+)?$", description="US dollars, a decimal string: exact."),
]
Assignee = Literal["executor", "planner"]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True)


class UsageTotals(_Data):
    """Tokens and cost of one model call, or a plan's running totals."""

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cache_hit_tokens: int = Field(ge=0, description="Prompt tokens served from the cache.")
    cost_usd: Money


class StatusChangedData(_Data):
    """The plan's phase: `thinking` (the planner started on the message), `executing` (a plan's
    steps are about to run), `cancelled`."""

    status: Literal["thinking", "executing", "cancelled"]


class AwaitingApprovalData(_Data):
    """The plan waits for the user: decide its pending approvals with
    `POST /plans/{plan_id}/approvals/{id}` (the agent_planner function)."""

    status: Literal["awaiting_approval"]
    message: str = Field(description="What the user is asked.")
    approvals: list[ApprovalOut] = Field(
        description="The plan's pending approvals, as `GET /plans/{id}/approvals` lists them."
    )


StatusUpdateData = Annotated[
    StatusChangedData | AwaitingApprovalData, Field(discriminator="status")
]


class TokenData(_Data):
    """A batch of the planner's streamed reply (never stored, never replayed)."""

    text: str


class ToolCallData(_Data):
    """A call the planner made in its own loop."""

    message_id: UUID = Field(description="The assistant `chat_messages` row holding the calls.")
    tool_call_id: str
    tool_name: str
    tool_args: dict[str, JsonValue] = Field(
        description='The parsed arguments; `{"unparsed": "…"}` when they were not JSON.'
    )


class ToolResultData(_Data):
    """The result of one of the planner's calls (`seq` is its `tool` row's)."""

    message_id: UUID = Field(description="The `tool` row.")
    tool_call_id: str
    tool_name: str
    ok: bool
    error: ToolErrorCode | None
    content: str = Field(description="The JSON text the model sees (clipped).")


class PermissionDeniedData(_Data):
    """A tool call refused at call time, or a destructive call the user did not approve; the
    tool did not run."""

    tool_name: str
    tool_call_id: str
    reason: str
    message_id: UUID = Field(description="The `permission_denied` dialogue row.")
    step_id: UUID | None = Field(description="Null in the planner's own loop.")


class PlannedStep(_Data):
    """One step of a plan as it was written."""

    step_id: UUID
    step_number: int = Field(ge=1)
    description: str
    assignee: Assignee
    depends_on: list[int] = Field(description="Numbers of the steps this one waits for.")
    tools: list[str]


class PlanCreatedData(_Data):
    """The planner's plan was valid and its steps are stored."""

    goal: str | None
    steps: list[PlannedStep]


class StepStartedData(_Data):
    """A step got its agent, thread and execution."""

    step_id: UUID
    step_number: int = Field(ge=1)
    description: str
    assignee: Assignee
    thread_id: UUID = Field(description="Its thread: `threads[].id` of `GET /plans/{id}`.")
    execution_id: UUID
    attempt: int = Field(ge=1)
    model: str


class AgentMessageData(_Data):
    """One row of the agent dialogue (`seq` is the row's)."""

    message_id: UUID
    thread_id: UUID | None
    step_id: UUID | None
    message_type: AgentMessageType
    sender_agent_id: UUID | None
    receiver_agent_id: UUID | None
    content: str | None = Field(description="Clipped to 4000 characters.")
    tool_name: str | None
    tool_call_id: str | None
    tool_args: dict[str, JsonValue] | None
    model: str | None = Field(description="Set on the row that carries a model call's usage.")


class UsageData(_Data):
    """After every model call but the one that writes the answer (its usage is in `done`)."""

    model: str
    call: UsageTotals
    plan: UsageTotals | None = Field(description="The plan's running totals after the call.")


class StepCompletedData(_Data):
    """A step ended."""

    step_id: UUID
    step_number: int = Field(ge=1)
    status: StepStatus
    result: str | None
    error: str | None
    thread_status: ThreadStatus | None = Field(description="Null for a step that never ran.")


class ErrorData(_Data):
    """The plan failed; always followed by `done`."""

    message: str = Field(description="Safe to show: no stack traces, no secrets.")
    code: Literal["llm_not_configured"] | None
    message_id: UUID | None = Field(description="The stored notice (`llm_not_configured`).")


class DoneData(_Data):
    """The end of a plan, or its pause for approval: the last event of the turn."""

    status: PlanStatus
    strategy: PlanStrategy | None
    answer: str | None = Field(
        description="The final answer, whole (past 200,000 bytes of JSON, its beginning and "
        "`…`: the stored message has it all), whatever its token batches carried."
    )
    message_id: UUID | None = Field(description="The answer's `chat_messages` row.")
    error: str | None
    usage: UsageTotals | None = Field(description="The plan's totals.")
    model: str | None = Field(
        description="The model of the call that wrote the answer; null when no call did."
    )
    call: UsageTotals | None = Field(
        description="That call's tokens and cost (it has no `usage` event of its own)."
    )


class _Event(BaseModel):
    session_id: UUID
    plan_id: UUID | None
    agent_id: UUID | None = Field(description="The agent the event is about, or null.")
    seq: int = Field(ge=1, description="Monotonic per session, shared with the stored rows.")
    ts: datetime
    id: UUID | None = Field(
        default=None,
        description="Only on events delivered by Realtime from the database: the "
        "`realtime.messages` row (`realtime.send()` adds it).",
    )


class StatusUpdateEvent(_Event):
    """The plan's phase changed."""

    type: Literal["status_update"]
    data: StatusUpdateData


class TokenEvent(_Event):
    """Streamed text of the planner's reply."""

    type: Literal["token"]
    data: TokenData


class ToolCallEvent(_Event):
    """The planner called one of its tools in its own loop."""

    type: Literal["tool_call"]
    data: ToolCallData


class ToolResultEvent(_Event):
    """The result of one of the planner's calls."""

    type: Literal["tool_result"]
    data: ToolResultData


class PermissionDeniedEvent(_Event):
    """A tool call was refused, or a destructive call not approved."""

    type: Literal["permission_denied"]
    data: PermissionDeniedData


class PlanCreatedEvent(_Event):
    """The planner wrote a plan."""

    type: Literal["plan_created"]
    data: PlanCreatedData


class StepStartedEvent(_Event):
    """A plan step started."""

    type: Literal["step_started"]
    data: StepStartedData


class StepCompletedEvent(_Event):
    """A plan step ended."""

    type: Literal["step_completed"]
    data: StepCompletedData


class AgentMessageEvent(_Event):
    """One message of the agents' dialogue."""

    type: Literal["agent_message"]
    data: AgentMessageData


class UsageEvent(_Event):
    """A model call's tokens and cost."""

    type: Literal["usage"]
    data: UsageData


class DoneEvent(_Event):
    """The turn ended, or paused for approval."""

    type: Literal["done"]
    data: DoneData


class ErrorEvent(_Event):
    """The plan failed."""

    type: Literal["error"]
    data: ErrorData


AnyEvent = Annotated[
    StatusUpdateEvent
    | TokenEvent
    | ToolCallEvent
    | ToolResultEvent
    | PermissionDeniedEvent
    | PlanCreatedEvent
    | StepStartedEvent
    | StepCompletedEvent
    | AgentMessageEvent
    | UsageEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
"""Any Parley event, told apart by `type`."""

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEvent)
DESCRIPTION = (
    "One event of a Parley chat session, as Realtime broadcasts it on `session:<session_id>` "
    "and as server-sent events carry it (`data:`). `data` depends on `type`; docs/events.md "
    "explains each. Every key of a `data` listed here is always present (null where it does "
    "not apply); keys may be added, so ignore those you do not know."
)


def events_json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of any event: `oneOf` the twelve types, by `type`."""
    schema = _ADAPTER.json_schema(ref_template="#/$defs/{model}", mode="serialization")
    return {"$schema": SCHEMA_DIALECT, "title": "Event", "description": DESCRIPTION, **schema}


def openapi_components() -> dict[str, Any]:
    """The events' schemas for an OpenAPI document's `components/schemas`: `Event` (any
    event) and what it refers to, under the names the JSON Schema gives them."""
    schema = _ADAPTER.json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
    defs = schema.pop("$defs")
    return {**defs, "Event": {"title": "Event", "description": DESCRIPTION, **schema}}
