"""The agent core's events: what each carries (`docs/events.md` documents every type's `data`).

Each is sent from the database by the statement (or transaction) that stores the state it
reports (`shared.db.transitions`, `EventEmitter.unit`). Events about one stored row carry that
row's `seq` (`agent_message` for dialogue rows, `tool_result` for the planner's tool rows); the
rest take their own number. Long texts are clipped in events; the tables hold them whole —
but for the answer in `done`, whole up to what a broadcast may carry on any plan.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import JsonValue

from shared.db.records import Approval, DialogueEntry, PlanStep
from shared.events.emitter import EventEmitter, Outbox
from shared.events.pacing import LoadQuery, Pacer, RealtimeBudget
from shared.kernel.usage import Usage
from shared.wire.turns import ApprovalOut

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices
    from shared.db.transitions import Transition
    from shared.events import Publisher
    from shared.kernel.settings import Settings

CLIP = 4000
ANSWER_BYTES = 200_000
"""Most bytes the answer takes in `done`, as JSON: the event stays within a broadcast's
payload limit on every plan (Free: 256 KB), so the whole answer arrives with it."""


def session_emitter(
    services: AgentServices, session_id: UUID, publisher: Publisher
) -> EventEmitter:
    """The emitter of a session's events, sent to `publisher` in this process and on the
    session's channel (private or not, as configured), its token batches paced to the
    project's Realtime budget when Realtime is configured."""
    settings = services.settings
    budget = realtime_budget(settings)
    private = settings.realtime_private_channels
    pacer = Pacer(budget, private=private, clock=time.monotonic) if budget else None
    return EventEmitter(services.db, publisher, session_id=session_id, private=private, pacer=pacer)


def realtime_budget(settings: Settings) -> RealtimeBudget | None:
    """The project's Realtime budget, when Parley broadcasts (`SUPABASE_URL` and the
    service-role key set) and a quota is given; None: token batches are not paced."""
    broadcasts = settings.supabase_url and settings.supabase_service_role_key
    if not broadcasts or not settings.realtime_quota_per_second:
        return None
    return RealtimeBudget(
        settings.realtime_quota_per_second,
        share=settings.realtime_quota_share,
        subscribers=settings.realtime_subscribers_per_session,
    )


def load_query(services: AgentServices, plan_id: UUID) -> LoadQuery | None:
    """What the statement before a plan's first streamed call adds to register its stream
    (None when batches are not paced); the emitter does the same for the calls after it."""
    budget = realtime_budget(services.settings)
    if budget is None:
        return None
    return LoadQuery(plan_id, budget, services.settings.realtime_private_channels)


def session_outbox(services: AgentServices, session_id: UUID) -> Outbox:
    """An empty outbox for a statement of the session made before its emitter is (the same
    channel setting as `session_emitter`)."""
    return Outbox(session_id, services.settings.realtime_private_channels)


def clip(text: str | None, limit: int = CLIP) -> str | None:
    """`text` cut to `limit` characters (events stay small; the row has it all)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def whole(text: str | None, limit: int = ANSWER_BYTES) -> str | None:
    """`text` as it is, unless as JSON it takes more than `limit` bytes: then its longest
    beginning that fits, with "…" (the row has it all)."""
    # Short enough whatever it holds: as JSON a character takes 6 bytes at most (a control
    # character escaped as `\u001f`), the quotes 2 — no need to encode it.
    if text is None or len(text) * 6 + 2 <= limit:
        return text
    if _json_bytes(text) <= limit:
        return text
    keep, over = 0, len(text)  # the longest beginning that fits: keep fits, over does not
    while over - keep > 1:
        middle = (keep + over) // 2
        keep, over = (middle, over) if _json_bytes(text[:middle] + "…") <= limit else (keep, middle)
    return text[:keep] + "…"


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode())


def _id(value: UUID | None) -> str | None:
    return str(value) if value is not None else None


def dialogue_data(
    message_id: UUID, entry: DialogueEntry, *, thread_id: UUID | None, step_id: UUID | None
) -> dict[str, JsonValue]:
    """`agent_message`: one dialogue row, given what it says (the row may not be stored yet)."""
    return {
        "message_id": str(message_id),
        "thread_id": _id(thread_id),
        "step_id": _id(step_id),
        "message_type": entry.message_type,
        "sender_agent_id": _id(entry.sender_agent_id),
        "receiver_agent_id": _id(entry.receiver_agent_id),
        "content": clip(entry.content),
        "tool_name": entry.tool_name,
        "tool_call_id": entry.tool_call_id,
        "tool_args": _json(entry.tool_args),
        "model": entry.model,
    }


def add_dialogue(
    transition: Transition,
    entry: DialogueEntry,
    *,
    thread_id: UUID | None,
    step_id: UUID | None,
    event_agent_id: UUID | None,
    announce: bool = True,
) -> UUID:
    """Add a dialogue row to `transition` and (unless not `announce`) its `agent_message`
    event, sent as `event_agent_id`; the row's id. A control call's `tool_args` are not stored
    when they are just the text the row's `content` holds (`history.without_text`); the event
    carries them."""
    from shared.agents.history import without_text  # history and budgets: off chat's cold start

    stored = entry
    if entry.tool_args is not None and entry.tool_name is not None:
        args = without_text(entry.message_type, entry.tool_name, entry.tool_args, entry.content)
        stored = entry._replace(tool_args=args)
    row_id, slot = transition.agent_message(stored, thread_id=thread_id)
    if announce:
        data = dialogue_data(row_id, entry, thread_id=thread_id, step_id=step_id)
        transition.event("agent_message", data, agent_id=event_agent_id, row=slot)
    return row_id


def answer_in_row(
    transition: Transition,
    call_row: UUID,
    entry: DialogueEntry,
    *,
    thread_id: UUID,
    step_id: UUID | None,
    event_agent_id: UUID | None,
) -> None:
    """Store the `tool_result` `entry` in its call's `tool_call` row (`call_row`), and announce
    it as an `agent_message` about that row, which takes the result's number."""
    slot = transition.answer_call(call_row, entry.content)
    data = dialogue_data(call_row, entry, thread_id=thread_id, step_id=step_id)
    transition.event("agent_message", data, agent_id=event_agent_id, row=slot)


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
    *,
    model: str | None = None,
    call: Usage | None = None,
) -> dict[str, JsonValue]:
    """`done`, but its `usage` (the plan's totals, filled where the plan is settled): the
    answer whole (`whole`), and the model call that wrote it (`model`, `call`: it has no
    `usage` event of its own)."""
    return {
        "status": status,
        "strategy": strategy,
        "answer": whole(answer),
        "message_id": _id(message_id),
        "error": error,
        "model": model,
        "call": call.json() if call is not None else None,
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

    return ApprovalOut.model_validate(approval).model_dump(mode="json")
