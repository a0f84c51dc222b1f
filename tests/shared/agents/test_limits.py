"""Where agents are stopped: denied writes, turn limits, invalid plans, the cost cap."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.services import Services
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task, snapshot
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis
from tests.support.scripting import Script, requests_of, tool_results
from tests.support.stored_rows import of_type, stored, types
from tests.support.user_facing import assert_names_no_setting

LOOKUP = "Look up the user's tasks"
ONE_STEP: dict[str, Any] = {
    "goal": "Look up tasks",
    "steps": [
        {"step_number": 1, "description": LOOKUP, "assignee": "executor", "tools": ["list_tasks"]}
    ],
}


async def test_an_executor_calling_a_write_tool_is_denied_and_the_plan_still_completes(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    before = await snapshot(db)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(
        LOOKUP,
        reply(tool_call("create_task", title="Sneaky")),
        reply(tool_call("complete", result="I may not create tasks.")),
    )
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=memory
    )

    assert turn.plan.status == "completed"
    assert await snapshot(db) == before  # nothing was written
    rows = await stored(db, turn.started.plan_id)
    # The denied call's row holds its result (the denial, as the model sees it), after the denial.
    assert rows.types_of(1) == ["delegation", "permission_denied", "tool_result", "completion"]
    said = rows.dialogue[rows.thread_of(1).id]
    denial, result = said[1], said[2]
    executor = next(a for a in rows.agents if a.role == "executor")
    assert (denial.tool_name, denial.sender_agent_id) == ("create_task", executor.id)
    assert "may only read" in denial.content
    assert json.loads(result.content)["error"] == "permission_denied"
    seen = requests_of(fake, "executor", LOOKUP)[1].messages[-1]
    assert seen["role"] == "tool" and "permission_denied" in seen["content"]  # the model saw it
    run = next(e for e in rows.executions if e.agent_role == "executor")
    assert (run.status, run.tool_call_count, run.permission_denials) == ("completed", 1, 1)
    (event,) = of_type(memory, "permission_denied")
    assert event.data["tool_name"] == "create_task" and event.agent_id == executor.id


async def test_an_executor_over_its_turn_limit_times_out_and_the_plan_uses_its_partial_result(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(executor_max_turns=2)
    user = await make_user(db)
    await make_task(db, user, title="Renew passport")
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(
        LOOKUP,
        reply(tool_call("list_tasks")),
        reply(tool_call("list_tasks", sort_by="priority")),
        complete_with_results("never reached"),
    )
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=memory
    )

    assert len(requests_of(fake, "executor")) == 2
    rows = await stored(db, turn.started.plan_id)
    thread = rows.thread_of(1)
    assert (thread.status, thread.turn_count, thread.max_turns) == ("timeout", 2, 2)
    (step,) = rows.steps
    assert step.status == "completed" and step.error == "reached its limit of 2 turns"
    assert step.result is not None and step.result.startswith("Partial result")
    assert "Renew passport" in step.result
    run = next(e for e in rows.executions if e.agent_role == "executor")
    assert run.status == "timeout" and run.llm_calls == 2
    assert rows.plan.status == "completed"
    plan_results = tool_results(requests_of(fake, "planner")[-1])[-1]
    assert "Renew passport" in plan_results and "reached its limit of 2 turns" in plan_results
    assert of_type(memory, "step_completed")[0].data["thread_status"] == "timeout"


async def test_the_wall_clock_limit_closes_a_step_even_while_its_model_call_hangs(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(executor_timeout_seconds=0.3)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, lambda request: reply(tool_call("list_tasks")).stalled(after=0))
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    rows = await stored(db, turn.started.plan_id)
    assert rows.thread_of(1).status == "timeout"
    (step,) = rows.steps
    assert (step.status, step.error) == ("completed", "ran out of time")
    assert step.result == (
        "Partial result (the step ran out of time before completing): nothing yet."
    )
    assert rows.plan.status == "completed"


async def test_an_invalid_plan_is_sent_back_with_its_problems_and_the_retry_runs(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    bad = {**ONE_STEP, "steps": [{**ONE_STEP["steps"][0], "tools": ["create_task"]}]}
    script.planner(plan_call(bad), plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, complete_with_results("Tasks"))
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    retry = requests_of(fake, "planner")[1].messages[-1]
    assert retry["role"] == "tool" and "executors are read-only" in retry["content"]
    rows = await stored(db, turn.started.plan_id)
    assert (rows.plan.strategy, rows.plan.status) == ("complex", "completed")
    assert [s.tools for s in rows.steps] == [["list_tasks"]]


async def test_a_planner_that_keeps_writing_invalid_plans_fails_the_turn_clearly(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(planner_plan_attempts=2)
    cyclic = {
        "goal": "loop",
        "steps": [{"step_number": 1, "description": "a", "assignee": "planner", "depends_on": [1]}],
    }
    script.planner(plan_call(cyclic), plan_call(cyclic))
    memory = InMemoryPublisher()
    user = await make_user(db)

    turn = await run_turn(services, user_id=user, session_id=None, message="loop", publisher=memory)

    assert len(fake.requests) == 2
    assert turn.plan.status == "failed"
    assert turn.plan.error and "could not write a valid plan in 2 attempts" in turn.plan.error
    assert types(memory)[-2:] == ["error", "done"]


async def test_the_cost_cap_stops_a_plan_before_the_next_model_call(
    db: Database,
    make_services: MakeServices,
    script: Script,
    fake: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    services = make_services(plan_max_cost_usd=Decimal("0.000001"))
    script.planner(reply(tool_call("list_tasks")), reply("never sent"))
    memory = InMemoryPublisher()
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=memory
    )

    assert len(fake.requests) == 1
    assert turn.plan.status == "failed" and "cap" in (turn.plan.error or "")
    (error,) = of_type(memory, "error")
    assert error.data["message"] == turn.plan.error
    assert_names_no_setting(turn.plan.error)  # the setting is the operator's: in the log
    assert any("PLAN_MAX_COST_USD" in r.getMessage() for r in caplog.records)
    rows = await stored(db, turn.started.plan_id)
    assert rows.plan.cost_usd > Decimal("0.000001")  # the call that crossed it is accounted
    assert [m.role for m in rows.messages] == ["user", "assistant", "tool"]
    assert memory.events[-1].type == "done" and memory.events[-1].data["status"] == "failed"


async def test_a_prompt_too_large_for_the_budget_is_told_without_naming_settings(
    db: Database,
    make_services: MakeServices,
    script: Script,
    fake: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The smallest budget: a message of half of it is taken, but does not fit beside the
    # planner's system prompt and tools (about 1,100 tokens).
    services = make_services(planner_token_budget=2000)
    memory = InMemoryPublisher()
    turn = await run_turn(
        services,
        user_id=await make_user(db),
        session_id=None,
        message="word " * 990,
        publisher=memory,
    )

    assert fake.requests == [] and turn.plan.status == "failed"
    (error,) = of_type(memory, "error")
    assert "tokens" in str(error.data["message"])
    assert_names_no_setting(turn.plan.error)
    assert any("PLANNER_TOKEN_BUDGET" in r.getMessage() for r in caplog.records)


async def test_a_denied_call_of_the_planners_own_loop_is_a_dialogue_row_and_counted(
    db: Database, services: Services, script: Script
) -> None:
    """The planner's own tool loop has no thread; its denials are dialogue rows all the same,
    so the denial dashboard agrees with the executions' counts."""
    user = await make_user(db)
    before = await snapshot(db)
    started = await start_turn(services, user_id=user, session_id=None, message="add a task")
    async with db.service() as conn:  # the planner's row now allows reading tasks only
        await conn.execute(
            "UPDATE agents SET allowed_tools = ARRAY['list_tasks'] WHERE id = "
            "(SELECT planner_agent_id FROM agent_plans WHERE id = %s)",
            (started.plan_id,),
        )
    script.planner(reply(tool_call("create_task", title="Sneaky")), reply("I may not."))
    memory = InMemoryPublisher()

    outcome = await InProcessInvoker(services, memory).run_plan(plan_id=started.plan_id)

    assert outcome.status == "completed"
    assert await snapshot(db) == before
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT m.id, m.agent_session_id, m.tool_name, m.content, a.role "
            "FROM agent_chat_messages m JOIN agents a ON a.id = m.sender_agent_id "
            "WHERE m.session_id = %s AND m.message_type = 'permission_denied'",
            (started.session_id,),
        )
        denials = await cur.fetchall()
        cur = await conn.execute(
            "SELECT (SELECT sum(denials) FROM permission_denials_daily d "
            "         WHERE d.tool_name = 'create_task' AND d.agent_role = 'planner') AS shown, "
            "       (SELECT sum(permission_denials) FROM agent_executions "
            "         WHERE plan_id = %s) AS counted",
            (started.plan_id,),
        )
        totals = await cur.fetchone()
    assert [(d["agent_session_id"], d["tool_name"], d["role"]) for d in denials] == [
        (None, "create_task", "planner")
    ]
    assert "not among the tools this agent may use" in denials[0]["content"]
    assert totals == {"shown": 1, "counted": 1}
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT plan_id FROM agent_chat_messages WHERE id = %s", (denials[0]["id"],)
        )
        assert await cur.fetchone() == {"plan_id": started.plan_id}
    (event,) = of_type(memory, "permission_denied")
    assert event.data["tool_name"] == "create_task"
