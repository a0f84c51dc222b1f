"""The permission decision: may this agent use this tool? Pure, and failing closed.

The same function decides what an agent is *offered* and whether a *call* may run; the executor
feeds it the agent row re-read from the database at call time, never what the model or the
request claims. Anything unexpected — no row, another user's row, an agent that is not
`active`, a permission level this code does not know — is a denial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from shared.db.records import Agent
from shared.tools.tool_registry import Access, ToolDefinition, ToolRegistry


class GuardedTool(Protocol):
    """What the decision needs to know about a tool."""

    @property
    def name(self) -> str: ...
    @property
    def access(self) -> Access: ...


@dataclass(frozen=True, slots=True)
class Decision:
    """Allowed, or denied with a reason that is safe to show the model."""

    allowed: bool
    reason: str = ""


ALLOWED = Decision(allowed=True)


class Policy(Protocol):
    """The shape of `decide`."""

    def __call__(
        self, agent: Agent | None, tool: GuardedTool, *, user_id: UUID | None = None
    ) -> Decision: ...


_ACCESS_BY_PERMISSION: dict[str, frozenset[Access]] = {
    "read_only": frozenset({"read"}),
    "read_write": frozenset({"read", "write"}),
}


def decide(agent: Agent | None, tool: GuardedTool, *, user_id: UUID | None = None) -> Decision:
    """Whether `agent` (its row as it is now) may use `tool`, optionally on behalf of `user_id`."""
    if agent is None:
        return Decision(False, "this agent does not exist (any more)")
    if user_id is not None and agent.user_id != user_id:
        return Decision(False, "this agent does not act for this user")
    if agent.status != "active":
        return Decision(False, f"this agent is {agent.status}, not active")
    granted = _ACCESS_BY_PERMISSION.get(agent.permissions)
    if granted is None:
        return Decision(False, "this agent's permission level is not recognised")
    if tool.access not in granted or (agent.role == "executor" and tool.access != "read"):
        return Decision(False, f"{tool.name} writes data and this agent may only read")
    if agent.allowed_tools is not None and tool.name not in agent.allowed_tools:
        return Decision(False, f"{tool.name} is not among the tools this agent may use")
    return ALLOWED


def offered_tools(agent: Agent, registry: ToolRegistry) -> list[ToolDefinition]:
    """The definitions of every tool `agent` may use, in registry order (stable for caching)."""
    return [tool.definition for tool in registry if decide(agent, tool).allowed]
