"""The one event shape everything streams: `{type, session_id, plan_id, agent_id, seq, ts, data}`.

`seq` comes from the same per-session counter as the `chat_messages` and `agent_chat_messages`
rows, so a frontend can read the tables up to some `seq` and then apply live events after it
without gaps or duplicates. An event about a stored row carries that row's `seq`.
"""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, JsonValue

EventType = Literal[
    "status_update",
    "token",
    "tool_call",
    "tool_result",
    "permission_denied",
    "plan_created",
    "step_started",
    "step_completed",
    "agent_message",
    "usage",
    "done",
    "error",
]

EVENT_TYPES: tuple[EventType, ...] = EventType.__args__  # type: ignore[attr-defined]


class Event(BaseModel):
    """One streamed event. `data` depends on `type`; see `docs/events.md`."""

    model_config = ConfigDict(frozen=True)

    type: EventType
    session_id: UUID
    plan_id: UUID | None = None
    agent_id: UUID | None = None
    seq: int
    ts: datetime
    data: dict[str, Any]
    """Any, not `JsonValue`: Parley's code builds it, and the suite checks every event it
    produces against `GET /schemas/events.json`. Checking it as JSON here would cost every cold
    start ~1.5 ms (pydantic's recursive JSON schema) and every event a deep copy."""

    def wire(self) -> dict[str, JsonValue]:
        """The event as a JSON-ready dict (what SSE and Realtime carry)."""
        return self.model_dump(mode="json")
