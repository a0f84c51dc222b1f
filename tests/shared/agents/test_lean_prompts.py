"""Prompts built for DeepSeek's prefix cache: each call is offered only what it can use, and
calls that can share a prefix (system prompt, then tools, then history) send it byte-identical —
so the provider's cache hits, and the hits are recorded."""

from __future__ import annotations

import json

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import prompts
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.events import Event
from shared.services import Services
from shared.tools import builtin_registry
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored


def prefix(body: dict[str, object], messages: int) -> str:
    """The request's system prompt, tools and first `messages` messages, as sent."""
    sent = body["messages"]
    assert isinstance(sent, list)
    return json.dumps([body.get("tools"), sent[:messages]])


async def test_each_call_is_offered_only_what_it_can_use_with_a_shared_prefix(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Renew passport")
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("list_tasks")), complete_with_results("Tasks"))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    registry = builtin_registry()
    routing, final = requests_of(fake, "planner")
    # the writes it can make without a lookup (no required id); reads are the executors' job
    assert routing.tool_names == ["create_task", "create_note", "create_brain_dump", "create_plan"]
    (plan_tool,) = [t for t in routing.body["tools"] if t["function"]["name"] == "create_plan"]
    step = plan_tool["function"]["parameters"]["properties"]["steps"]["items"]
    assert step["properties"]["tools"]["items"]["enum"] == [t.name for t in registry]
    assert "tools" not in final.body and "tool_choice" not in final.body  # it cannot call any
    assert final.messages[0] == routing.messages[0]  # the system prompt, byte for byte
    first, second = requests_of(fake, "executor")
    assert first.tool_names == ["complete", "fail", "escalate", "ask_planner", "list_tasks"]
    assert prefix(dict(first.body), 2) == prefix(dict(second.body), 2)
    assert turn.plan.status == "completed"


async def test_a_plan_that_only_gathers_is_answered_on_the_executor_model(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Renew passport")
    script.planner(plan_call({**ONE_STEP, "answer": "executor"}), synthesis)
    script.step(LOOKUP, reply(tool_call("list_tasks")), complete_with_results("Tasks"))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    routing, final = requests_of(fake, "planner")
    assert routing.model == services.settings.llm_planner_model
    assert final.model == services.settings.llm_executor_model
    assert str(final.messages[-1]["content"]).startswith(prompts.PLAN_RESULTS)  # all of them
    assert turn.plan.status == "completed"
    answer = (await stored(db, turn.started.plan_id)).answer
    assert answer.model == services.settings.llm_executor_model  # priced as the model it was


async def test_a_plan_may_leave_out_what_has_a_default(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Renew passport")
    lean = {"steps": [{"description": LOOKUP, "tools": ["list_tasks"]}]}  # goal, number, assignee
    script.planner(plan_call(lean), synthesis)
    script.step(LOOKUP, reply(tool_call("list_tasks")), complete_with_results("Tasks"))

    message = "Which tasks do I have?"
    turn = await run_turn(
        services, user_id=user, session_id=None, message=message, publisher=InMemoryPublisher()
    )

    rows = await stored(db, turn.started.plan_id)
    (step,) = rows.steps
    assert (step.step_number, step.executor_required) == (1, True)
    assert rows.plan.goal == "Which tasks do I have?"  # the message is the goal
    (first, _) = requests_of(fake, "executor")
    assert "Goal of the plan: Which tasks do I have?" in str(first.messages[1]["content"])
    routing, final = requests_of(fake, "planner")
    assert routing.model == final.model == services.settings.llm_planner_model  # by default
    assert turn.plan.status == "completed"


async def test_cache_hits_are_reported_and_recorded_per_call(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Renew passport")
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("list_tasks")), complete_with_results("Tasks"))

    memory = InMemoryPublisher()
    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=memory
    )

    rows = await stored(db, turn.started.plan_id)
    executor = next(e for e in rows.executions if e.agent_role == "executor")
    first, second = [  # one `usage` event per model call, with the call's own figures
        _cache_hits(e)
        for e in memory.events
        if e.type == "usage" and e.agent_id == executor.agent_id
    ]
    assert first == 0  # a cold cache
    assert second > 0  # it re-sent the first call's prompt and output
    assert second == fake.exchanges[-2].usage.cache_hit_tokens  # type: ignore[union-attr]
    # The calls are recorded on the executor's run (the dialogue rows do not repeat them).
    assert executor.cache_hit_tokens == first + second


def _cache_hits(event: Event) -> int:
    call = event.data["call"]
    assert isinstance(call, dict)
    hits = call["cache_hit_tokens"]
    assert isinstance(hits, int)
    return hits
