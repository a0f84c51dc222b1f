"""What a tool call gives back to the model: an output, or a structured error."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Literal

from shared.tools.schema import JsonObject

ToolErrorCode = Literal[
    "invalid_arguments",  # bad JSON, schema violation, or arguments that make no sense
    "unknown_tool",  # no tool by that name
    "permission_denied",  # the agent's row does not allow this tool (the tool did not run)
    "not_found",  # the record does not exist or belongs to someone else
    "conflict",  # the request clashes with the current state
    "tool_failed",  # the tool broke; details are in the logs, not in the message
]

REPEAT_NOTE = (
    "Identical to an earlier call in this turn; the tool was not run again and this is the "
    "earlier result."
)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call, ready to become the `tool` message for `call_id`."""

    call_id: str
    """The provider's id of the call this answers."""
    tool_name: str
    payload: JsonObject
    """The tool's output, or `{"error": code, "message": ...}`."""
    error: ToolErrorCode | None = None
    """None on success."""
    repeat_of: str | None = None
    """Set on a de-duplicated call: the id of the earlier identical call whose result this is."""

    @property
    def ok(self) -> bool:
        """True when the tool ran and succeeded."""
        return self.error is None

    def content(self) -> str:
        """The JSON text for the model's `tool` message (compact; repeats are marked)."""
        body = self.payload
        if self.repeat_of is not None:
            body = {**body, "repeated": True, "note": REPEAT_NOTE}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))

    def as_repeat(self, *, call_id: str, of: str) -> ToolResult:
        """This result, answering the identical later call `call_id`."""
        return replace(self, call_id=call_id, repeat_of=of)


def failure(call_id: str, tool_name: str, code: ToolErrorCode, message: str) -> ToolResult:
    """A structured error result."""
    return ToolResult(call_id, tool_name, {"error": code, "message": message}, error=code)


class ToolCallError(Exception):
    """Raised by a tool (or its runner) to answer with a structured error of its choice."""

    def __init__(self, code: ToolErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ToolErrorCode = code
        self.message = message


def problem_list(problems: list[str], *, shown: int = 10) -> str:
    """Problems joined for the model: the first `shown`, then how many more were found."""
    text = "; ".join(problems[:shown])
    if len(problems) > shown:
        text += f"; and {len(problems) - shown} more problems (fix these first)"
    return text
