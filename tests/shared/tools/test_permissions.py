"""The permission decision as a pure function of the agent row and the tool."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from shared.db.records import Agent
from shared.tools import ToolDefinition, ToolRegistry, builtin_registry, decide, offered_tools

USER = uuid4()
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def agent(**changes: Any) -> Agent:
    row = Agent(
        id=uuid4(),
        user_id=USER,
        chat_session_id=uuid4(),
        parent_agent_id=None,
        role="executor",
        name="e",
        model="m",
        permissions="read_only",
        allowed_tools=None,
        token_budget=1000,
        prompt_id=None,
        status="active",
        created_at=NOW,
        completed_at=None,
    )
    return row._replace(**changes)


def tool(name: str, access: str) -> ToolDefinition:
    return ToolDefinition(name, "", {"type": "object"}, access, False)  # type: ignore[arg-type]


READ = tool("list_tasks", "read")
WRITE = tool("create_task", "write")
PLANNER = {"role": "planner", "permissions": "read_write"}


@pytest.mark.parametrize(
    ("row", "target", "allowed"),
    [
        (agent(), READ, True),
        (agent(), WRITE, False),
        (agent(**PLANNER), WRITE, True),
        (agent(**PLANNER), READ, True),
        (agent(allowed_tools=["get_task_details"]), READ, False),
        (agent(allowed_tools=["list_tasks"]), READ, True),
        (agent(allowed_tools=[]), READ, False),
        (agent(allowed_tools=["create_task"]), WRITE, False),  # a list never widens the level
        (agent(**PLANNER, allowed_tools=["list_tasks"]), WRITE, False),
        (agent(role="executor", permissions="read_write"), WRITE, False),  # executors never write
        (agent(status="completed"), READ, False),
        (agent(status="failed"), READ, False),
        (agent(status="idle"), READ, False),
        (agent(permissions="admin"), READ, False),
        (agent(permissions="READ_ONLY"), READ, False),
        (None, READ, False),
    ],
)
def test_decide(row: Agent | None, target: ToolDefinition, allowed: bool) -> None:
    decision = decide(row, target, user_id=USER)
    assert decision.allowed is allowed
    assert bool(decision.reason) is not allowed


def test_another_users_agent_is_denied() -> None:
    assert not decide(agent(user_id=uuid4()), READ, user_id=USER).allowed
    assert decide(agent(), READ).allowed  # no user to compare: the offer case


def test_reasons_name_the_tool_but_nothing_internal() -> None:
    reason = decide(agent(), WRITE, user_id=USER).reason
    assert reason == "create_task writes data and this agent may only read"


def test_offered_tools_follow_the_same_decision() -> None:
    registry: ToolRegistry = builtin_registry()
    names = [
        d.name
        for d in offered_tools(agent(allowed_tools=["create_task", "search_notes"]), registry)
    ]
    assert names == ["search_notes"]
    assert offered_tools(agent(status="completed"), registry) == []


def test_user_ids_are_compared_as_values() -> None:
    assert decide(agent(), READ, user_id=UUID(str(USER))).allowed
