"""The agent core's events: what each carries (`docs/events.md` documents every type's `data`).

Each is sent from the database by the statement (or transaction) that stores the state it
reports (`shared.db.transitions`, `EventEmitter.unit`). Events about one stored row carry that
row's `seq` (`agent_message` for dialogue rows, `tool_result` for the planner's tool rows); the
rest take their own number. Long texts are clipped in events; the tables hold them whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import JsonValue

from shared.agents.history import without_text
from shared.db.records import AgentMessageType, Approval, PlanStep
from shared.events.emitter import EventEmitter, Outbox

if TYPE_CHECKING:
    from shared.db.transitions import Transition
    from shared.events import Publisher
    from shared.services import Services

CLIP = 4000


def session_emitter(services: Services, session_id: UUID, publisher: Publisher) -> EventEmitter:
    """The emitter of a session's events, sent to `publisher` in this process and on the
    session's channel (private or not, as configured)."""
    return EventEmitter(services.db, publisher, session_id=session_id,
                        private=services.settings.realtime_private_channels)  # fmt: skip


def session_outbox(services: Services, session_id: UUID) -> Outbox:
    """An empty outbox for a statement of the session made before its emitter is (the same
    channel setting as `session_emitter`)."""
    return Outbox(session_id, services.settings.realtime_private_channels)


def clip(text: str | None, limit: int = CLIP) -> str | None:
    """`text` cut to `limit` characters (events stay small; the row has it all)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _id(value: UUID | None) -> str | None:
    return str(value) if value is not None else None


def dialogue_data(
    message_id: UUID,
    *,
    thread_id: UUID | None,
    step_id: UUID | None,
    message_type: str,
    sender_agent_id: UUID | None,
    receiver_agent_id: UUID | None,
    content: str,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
    tool_args: dict[str, Any] | None = None,
    model: str | None = None,
) -> dict[str, JsonValue]:
    """`agent_message`: one dialogue row, given its fields (the row may not be stored yet)."""
    return {
        "message_id": str(message_id),
        "thread_id": _id(thread_id),
        "step_id": _id(step_id),
        "message_type": message_type,
        "sender_agent_id": _id(sender_agent_id),
        "receiver_agent_id": _id(receiver_agent_id),
        "content": clip(content),
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
        "tool_args": _json(tool_args),
        "model": model,
    }


def add_dialogue(
    transition: Transition,
    *,
    thread_id: UUID | None,
    step_id: UUID | None,
    event_agent_id: UUID | None,
    message_type: AgentMessageType,
    content: str,
    sender_agent_id: UUID | None,
    receiver_agent_id: UUID | None,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
    tool_args: dict[str, Any] | None = None,
    model: str | None = None,
    reasoning_content: str | None = None,
    announce: bool = True,
) -> UUID:
    """Add a dialogue row to `transition` and (unless not `announce`) its `agent_message`
    event, sent as `event_agent_id`; the row's id. A control call's `tool_args` are not stored
    when they are just the text the row's `content` holds (`history.without_text`); the event
    carries them."""
    stored = tool_args
    if tool_args is not None and tool_name is not None:
        stored = without_text(message_type, tool_name, tool_args, content)
    row_id, slot = transition.agent_message(
        thread_id=thread_id, message_type=message_type, content=content,
        sender_agent_id=sender_agent_id, receiver_agent_id=receiver_agent_id,
        tool_name=tool_name, tool_call_id=tool_call_id, tool_args=stored, model=model,
        reasoning_content=reasoning_content,
    )  # fmt: skip
    if announce:
        data = dialogue_data(
            row_id, thread_id=thread_id, step_id=step_id, message_type=message_type,
            sender_agent_id=sender_agent_id, receiver_agent_id=receiver_agent_id,
            content=content, tool_name=tool_name, tool_call_id=tool_call_id,
            tool_args=tool_args, model=model,
        )  # fmt: skip
        transition.event("agent_message", data, agent_id=event_agent_id, row=slot)
    return row_id


def step_started_data(
    step: PlanStep, *, thread_id: UUID, execution_id: UUID, attempt: int, model: str
) -> dict[str, JsonValue]:
    """`step_started`: who works on the step, in which thread, paid by which execution."""
    return {
        "step_id": str(step.id),
        "step_number": step.step_number,
        "description": clip(step.description),
        "assignee": "executor" if step.executor_required else "planner",
        "thread_id": str(thread_id),
        "execution_id": str(execution_id),
        "attempt": attempt,
        "model": model,
    }


def step_completed_data(step: PlanStep, thread_status: str | None) -> dict[str, JsonValue]:
    """`step_completed`: the step's final status, result or error, and how its thread ended."""
    return {
        "step_id": str(step.id),
        "step_number": step.step_number,
        "status": step.status,
        "result": clip(step.result),
        "error": clip(step.error),
        "thread_status": thread_status,
    }


def done_data(
    status: str,
    strategy: str | None,
    answer: str | None,
    message_id: UUID | None,
    error: str | None,
) -> dict[str, JsonValue]:
    """`done`, but its `usage` (the plan's totals, filled where the plan is settled)."""
    return {
        "status": status,
        "strategy": strategy,
        "answer": clip(answer),
        "message_id": _id(message_id),
        "error": error,
    }


def error_data(
    message: str, *, code: str | None = None, message_id: UUID | None = None
) -> dict[str, JsonValue]:
    """`error`: why the plan failed (readable), and what a client may act on."""
    return {"message": message, "code": code, "message_id": _id(message_id)}


def _json(value: Any) -> JsonValue:
    return value  # type: ignore[no-any-return]  # stored JSON is JSON


def approval_data(approval: Approval) -> dict[str, JsonValue]:
    """One pending approval as `status_update{awaiting_approval}` lists it: as the approvals
    routes give it (`ApprovalOut`), so a client reads both with one type."""
    from shared.models.turns import ApprovalOut

    return ApprovalOut.model_validate(approval).model_dump(mode="json")
