"""The agent core's events, each emitted after the state it reports is committed.

`docs/events.md` documents every type's `data`. Events about one stored row carry that row's
`seq` (`agent_message` for dialogue rows, `tool_result` for the planner's tool rows); the rest
draw a fresh number from the session's counter. Long texts are clipped in events; the tables
hold them whole.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import JsonValue

from shared.db.records import AgentMessage, AgentThread, Approval, Execution, PlanStep
from shared.events import EventEmitter

CLIP = 4000


def clip(text: str | None, limit: int = CLIP) -> str | None:
    """`text` cut to `limit` characters (events stay small; the row has it all)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _id(value: UUID | None) -> str | None:
    return str(value) if value is not None else None


async def emit_agent_message(
    emitter: EventEmitter, row: AgentMessage, *, plan_id: UUID, step_id: UUID | None
) -> None:
    """`agent_message` for one dialogue row, with the row's seq."""
    data: dict[str, JsonValue] = {
        "message_id": str(row.id),
        "thread_id": _id(row.agent_session_id),
        "step_id": _id(step_id),
        "message_type": row.message_type,
        "sender_agent_id": _id(row.sender_agent_id),
        "receiver_agent_id": _id(row.receiver_agent_id),
        "content": clip(row.content),
        "tool_name": row.tool_name,
        "tool_call_id": row.tool_call_id,
        "tool_args": _json(row.tool_args),
        "model": row.model,
    }
    await emitter.emit(
        "agent_message", data, plan_id=plan_id, agent_id=row.sender_agent_id, seq=row.seq
    )


async def emit_step_started(
    emitter: EventEmitter,
    step: PlanStep,
    *,
    thread: AgentThread,
    execution: Execution,
    seq: int | None = None,
) -> None:
    """`step_started`: who works on the step, in which thread, paid by which execution."""
    data: dict[str, JsonValue] = {
        "step_id": str(step.id),
        "step_number": step.step_number,
        "description": clip(step.description),
        "assignee": "executor" if step.executor_required else "planner",
        "thread_id": str(thread.id),
        "execution_id": str(execution.id),
        "attempt": execution.attempt,
        "model": execution.model,
    }
    await emitter.emit(
        "step_started", data, plan_id=step.plan_id, agent_id=execution.agent_id, seq=seq
    )


async def emit_step_completed(
    emitter: EventEmitter, step: PlanStep, *, thread_status: str | None, agent_id: UUID | None
) -> None:
    """`step_completed`: the step's final status, result or error, and how its thread ended."""
    data: dict[str, JsonValue] = {
        "step_id": str(step.id),
        "step_number": step.step_number,
        "status": step.status,
        "result": clip(step.result),
        "error": clip(step.error),
        "thread_status": thread_status,
    }
    await emitter.emit("step_completed", data, plan_id=step.plan_id, agent_id=agent_id)


def _json(value: Any) -> JsonValue:
    return value  # type: ignore[no-any-return]  # stored JSON is JSON


def approval_data(approval: Approval) -> dict[str, JsonValue]:
    """One pending approval as `status_update{awaiting_approval}` lists it."""
    return {
        "approval_id": str(approval.id),
        "kind": approval.kind,
        "step_id": _id(approval.step_id),
        "agent_id": str(approval.agent_id),
        "tool_call_id": approval.tool_call_id,
        "tool_name": approval.tool_name if approval.kind == "tool_call" else None,
        "arguments": approval.tool_args,
        "reason": clip(approval.reason),
    }
