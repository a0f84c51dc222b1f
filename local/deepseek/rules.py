"""The history rules real providers enforce with a 400, so the fake refuses what they refuse."""

from __future__ import annotations

from typing import Any

ORPHAN = (
    "Messages with role 'tool' must be a response to a preceding message with 'tool_calls' "
    "(message index {index})."
)
UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids} "
    "(message index {index})."
)


def history_error(messages: list[dict[str, Any]]) -> str | None:
    """The provider's 400 message for a broken tool-call pairing, or None when it is valid."""
    open_ids: set[str] = set()
    opened_at = -1
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids:
                return ORPHAN.format(index=index)
            open_ids.discard(call_id)
            continue
        if open_ids:
            return UNANSWERED.format(ids=", ".join(sorted(open_ids)), index=opened_at)
        calls = message.get("tool_calls") or []
        open_ids = {str(c.get("id")) for c in calls if isinstance(c, dict)}
        opened_at = index
    if open_ids:
        return UNANSWERED.format(ids=", ".join(sorted(open_ids)), index=opened_at)
    return None
