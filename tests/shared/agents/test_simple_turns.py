"""Direct and tool turns: one call decides and answers; the planner's own tool loop."""

from __future__ import annotations

import json
import sys

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import TurnStillRunning, request_cancel, start_turn
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.services import Services
from tests.support import ROOT
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script, tool_results
from tests.support.stored_rows import of_type, stored, streamed_text, types

MCP_ECHO = ROOT / "tests" / "support" / "mcp_echo_server.py"


async def test_a_direct_turn_costs_one_call_and_streams_its_answer(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    script.planner(reply("Hello! ", "How can I help?"))
    memory = InMemoryPublisher()
    user = await make_user(db)

    turn = await run_turn(services, user_id=user, session_id=None, message="hi", publisher=memory)

    assert len(fake.requests) == 1
    assert "create_plan" in fake.requests[0].tool_names  # routing happened in this one call
    assert turn.plan.status == "completed" and turn.plan.answer == "Hello! How can I help?"
    rows = await stored(db, turn.started.plan_id)
    assert rows.plan.strategy == "direct" and rows.steps == [] and rows.threads == []
    assert [m.role for m in rows.messages] == ["user", "assistant"]
    answer = rows.answer
    assert answer.plan_id == rows.plan.id and answer.model == "test-planner"
    assert answer.prompt_tokens > 0 and answer.completion_tokens > 0 and answer.cost_usd > 0
    (run,) = rows.executions
    assert (run.agent_role, run.status, run.llm_calls, run.step_id) == (
        "planner",
        "completed",
        1,
        None,
    )
    assert run.cost_usd == answer.cost_usd == rows.plan.cost_usd
    assert streamed_text(memory) == "Hello! How can I help?"
    assert types(memory) == ["status_update", "done"]
    assert memory.events[-1].data["answer"] == "Hello! How can I help?"
    seqs = [e.seq for e in memory.events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


async def test_a_tool_turn_runs_the_planners_loop_and_answers_from_the_results(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Water the plants", priority="high")
    script.planner(
        reply("Let me look.", tool_call("list_tasks", priority=["high"])),
        lambda request: reply(
            f"You have: {json.loads(tool_results(request)[0])['tasks'][0]['title']}"
        ),
    )
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=user, session_id=None, message="my urgent tasks?", publisher=memory
    )

    assert len(fake.requests) == 2
    second = fake.requests[1].messages
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool"]
    assert "Water the plants" in second[-1]["content"]  # the planner saw its tool's result
    rows = await stored(db, turn.started.plan_id)
    assert rows.plan.strategy == "tool" and rows.plan.status == "completed"
    assert [(m.role, m.metadata.get("kind")) for m in rows.messages] == [
        ("user", None),
        ("assistant", "tool_round"),
        ("tool", "tool_result"),
        ("assistant", "answer"),
    ]
    round_row, tool_row = rows.messages[1], rows.messages[2]
    assert round_row.tool_calls and round_row.tool_calls[0]["function"]["name"] == "list_tasks"
    assert tool_row.tool_call_id == round_row.tool_calls[0]["id"]
    assert "Water the plants" in (turn.plan.answer or "")
    (run,) = rows.executions
    assert (run.llm_calls, run.tool_call_count, run.permission_denials) == (2, 1, 0)
    assert run.cost_usd == sum(m.cost_usd for m in rows.messages) == rows.plan.cost_usd > 0
    assert types(memory) == ["status_update", "tool_call", "tool_result", "done"]
    (result,) = of_type(memory, "tool_result")
    assert result.seq == tool_row.seq and result.data["ok"] is True


async def test_start_turn_stores_the_message_once_per_client_message_id(
    db: Database, services: Services
) -> None:
    user = await make_user(db)
    first = await start_turn(
        services, user_id=user, session_id=None, message="hello", client_message_id="c-1"
    )
    again = await start_turn(
        services,
        user_id=user,
        session_id=first.session_id,
        message="hello",
        client_message_id="c-1",
    )
    assert first.created and not again.created
    assert (again.message_id, again.plan_id) == (first.message_id, first.plan_id)
    with pytest.raises(TurnStillRunning):  # the first turn has not run yet
        await start_turn(services, user_id=user, session_id=first.session_id, message="more")
    cancelled = await request_cancel(services, plan_id=first.plan_id, user_id=user)
    assert cancelled.status == "cancelled"  # nobody was running it: closed at once
    other = await start_turn(services, user_id=user, session_id=first.session_id, message="more")
    assert other.planner_agent_id == first.planner_agent_id and other.plan_id != first.plan_id


async def test_a_turn_run_in_this_process_offers_the_mcp_tools(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    """Sending no longer connects the MCP servers (the deployed chat runs no agent); the
    planner does, wherever it runs — here, in the sender's process (the local stack's way)."""
    echo = {"name": "echo", "command": sys.executable, "args": [str(MCP_ECHO)]}
    services = make_services(mcp_servers=[echo])
    script.planner(reply("Hi."))
    user = await make_user(db)
    try:
        await run_turn(
            services, user_id=user, session_id=None, message="hi", publisher=InMemoryPublisher()
        )
    finally:
        await services.aclose()

    assert "echo_echo" in fake.requests[0].tool_names
