"""Every request Parley makes passes DeepSeek's twin, in every thinking mode.

DeepSeek's V4 models think unless told not to; thinking mode refuses a forced `tool_choice` and
wants earlier turns' reasoning back on requests that carry tools, and that of turns which called
tools on every later request, tools or not (docs/deepseek.md). The twin
refuses what DeepSeek refuses, so a turn that completes here with no request refused is one
DeepSeek serves: routing, the planner's own step, executor steps, a question and its answer,
the final answer, and the next message of the session, for each pair of settings.
"""

from __future__ import annotations

import logging
from itertools import product
from typing import Any

import httpx
import pytest

from local.deepseek import (
    FakeModelServer,
    RecordedRequest,
    Reply,
    ScriptItem,
    demo_reply,
    error,
    insufficient_balance,
    invalid_key,
    reply,
    tool_call,
)
from shared.agents import run_plan, start_turn
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.events import EventEmitter
from tests.shared.agents.test_resume import FIND, TWO_STEPS, WRITE, Crash, CrashAfterStep
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call
from tests.support.scripting import Script, kind_of, requests_of
from tests.support.stored_rows import stored

MODES = ("auto", "enabled", "disabled")
DEMO_ASK = "plan my week: list my tasks and my calendar, then create a task"


def deepseek(make_services: MakeServices, planner: str, executor: str, **more: Any) -> Any:
    """Services on DeepSeek's names (served by the twin as DeepSeek serves them)."""
    models = {"llm_planner_model": "deepseek-v4-pro", "llm_executor_model": "deepseek-flash"}
    modes = {"llm_planner_thinking": planner, "llm_executor_thinking": executor}
    return make_services(**models, **modes, **more)


def thinks(mode: str) -> bool:
    return mode != "disabled"  # auto: DeepSeek's default, thinking


class AskingDemo:
    """The demo model playing every agent, but the tasks step's executor first asks the planner
    a question (so `ask_planner` and the planner's answer are among the requests)."""

    def __init__(self) -> None:
        self.asked = False

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        tools = {t["function"]["name"] for t in request.body.get("tools") or ()}
        if "ask_planner" in tools and "list_tasks" in str(request.messages) and not self.asked:
            self.asked = True
            return reply(tool_call("ask_planner", question="Which week do you mean?"))
        return demo_reply(request)


async def titles(db: Database, user: Any) -> list[str]:
    async with db.service() as conn:
        cur = await conn.execute("SELECT title FROM tasks WHERE user_id = %s", (user,))
        return [row["title"] for row in await cur.fetchall()]


@pytest.mark.parametrize(("planner", "executor"), list(product(MODES, MODES)))
async def test_every_request_passes_deepseeks_twin_in_every_thinking_mode(
    db: Database, make_services: MakeServices, fake: FakeModelServer, planner: str, executor: str
) -> None:
    services = deepseek(make_services, planner, executor)
    fake.respond_with(AskingDemo())
    user = await make_user(db)

    first = await run_turn(
        services, user_id=user, session_id=None, message=DEMO_ASK, publisher=InMemoryPublisher()
    )
    again = "thanks! and what else is on?"
    second = await run_turn(
        services,
        user_id=user,
        session_id=first.started.session_id,
        message=again,
        publisher=InMemoryPublisher(),
    )

    assert [e.refused for e in fake.exchanges if e.refused] == []
    assert (first.plan.status, second.plan.status) == ("completed", "completed")
    assert await titles(db, user) == ["Demo task from Parley"]  # written exactly once
    kinds = {kind_of(r) for r in fake.requests}
    assert kinds == {"planner", "planner_step", "executor", "answer"}
    for request in fake.requests:
        role = "executor" if kind_of(request) == "executor" else "planner"
        mode = executor if role == "executor" else planner
        sent = request.body.get("thinking")
        assert sent == (None if mode == "auto" else {"type": mode})
        if kind_of(request) in ("executor", "planner_step"):  # a step's turn must call a tool
            assert request.body["tool_choice"] == ("auto" if thinks(mode) else "required")
    # The plan's final answer is asked for without tools, after the turn's tool calls: in
    # thinking mode those calls' reasoning goes back all the same (DeepSeek's Chinese guide).
    finals = [r for r in requests_of(fake, "planner") if not r.body.get("tools")]
    calls = [m for r in finals for m in r.messages if m.get("tool_calls")]
    assert finals and calls
    assert all(("reasoning_content" in m) == thinks(planner) for m in calls)
    later = fake.requests[-1]  # the second message's routing call replays the first turn
    assert later.messages[-2]["role"] == "assistant" and later.body.get("tools")
    assert ("reasoning_content" in later.messages[-2]) == thinks(planner)


@pytest.mark.parametrize("planner", MODES)
async def test_a_tool_turn_and_the_next_message_pass_deepseeks_twin(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer, planner: str
) -> None:
    services = deepseek(make_services, planner, "disabled")
    user = await make_user(db)
    await make_task(db, user, title="Weed the garden")
    script.planner(reply(tool_call("list_tasks")).without_reasoning(), reply("One: weeding."))

    first = await run_turn(
        services, user_id=user, session_id=None, message="my tasks?", publisher=InMemoryPublisher()
    )
    Script(fake).planner(reply("Still just the weeding."))
    session = first.started.session_id
    second = await run_turn(
        services, user_id=user, session_id=session, message="more?", publisher=InMemoryPublisher()
    )

    assert (first.plan.strategy, first.plan.status) == ("tool", "completed")
    assert second.plan.status == "completed"
    assert [e.refused for e in fake.exchanges if e.refused] == []
    answer = requests_of(fake, "planner")[1]  # after the call: its reasoning ("" here) goes back
    called = next(m for m in answer.messages if m.get("tool_calls"))
    assert called.get("reasoning_content") == ("" if thinks(planner) else None)


@pytest.mark.parametrize("planner", ["auto", "enabled"])
async def test_a_plan_whose_model_sent_no_reasoning_resumes_after_a_kill_and_completes(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer, planner: str
) -> None:
    services = deepseek(make_services, planner, "enabled")
    user = await make_user(db)
    await make_task(db, user, title="Weed the garden")
    bare: list[Reply] = [
        plan_call(TWO_STEPS).without_reasoning(),
        reply(tool_call("list_tasks", query="garden")).without_reasoning(),
        reply(tool_call("create_task", title="Buy seeds")).with_empty_reasoning(),
        reply(tool_call("complete", result="Created Buy seeds")).without_reasoning(),
    ]
    script.planner(bare[0], reply("Done: seeds to buy.").without_reasoning())
    script.step(FIND, bare[1], lambda r: complete_with_results("Tasks")(r).without_reasoning())
    script.step(WRITE, bare[2], bare[3], kind="planner_step")
    started = await start_turn(services, user_id=user, session_id=None, message="garden plan")
    dying = CrashAfterStep(InProcessInvoker(services, InMemoryPublisher()))
    emitter = EventEmitter(db, InMemoryPublisher(), session_id=started.session_id)
    with pytest.raises(Crash):
        await run_plan(services, plan_id=started.plan_id, emitter=emitter, invoker=dying)

    outcome = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=started.plan_id
    )

    assert outcome.status == "completed", outcome.error
    assert [e.refused for e in fake.exchanges if e.refused] == []
    assert (await titles(db, user)).count("Buy seeds") == 1
    step = requests_of(fake, "planner_step")[-1]  # carries tools: reasoning passed back empty
    assert [m["reasoning_content"] for m in step.messages if m["role"] == "assistant"] == [""]


async def test_a_forced_call_under_thinking_is_what_deepseek_refuses(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    """The rule the step loops keep: the same step, forced with `required`, is refused."""
    services = deepseek(make_services, "auto", "disabled")
    user = await make_user(db)
    script.planner(plan_call(TWO_STEPS), reply("ok"))
    script.step(FIND, reply(tool_call("list_tasks")), complete_with_results("Tasks"))
    script.step(
        WRITE,
        reply(tool_call("create_task", title="Buy seeds")),
        reply(tool_call("complete", result="Created")),
        kind="planner_step",
    )

    await run_turn(
        services, user_id=user, session_id=None, message="garden", publisher=InMemoryPublisher()
    )
    step = requests_of(fake, "planner_step")[0]
    forced = {**step.body, "tool_choice": "required"}
    async with httpx.AsyncClient(base_url=fake.base_url) as http:
        refused = await http.post("/chat/completions", json=forced)

    assert step.body["tool_choice"] == "auto" and "thinking" not in step.body
    assert refused.json()["error"]["message"] == "Thinking mode does not support this tool_choice"


async def test_a_step_that_only_talks_fails_saying_so(
    db: Database, make_services: MakeServices, script: Script
) -> None:
    services = deepseek(make_services, "auto", "disabled")
    user = await make_user(db)
    talk = reply("I would create the task now.")
    script.planner(plan_call(TWO_STEPS), reply("Sorry."))
    script.step(FIND, reply(tool_call("list_tasks")), complete_with_results("Tasks"))
    script.step(WRITE, talk, talk, talk, kind="planner_step")

    turn = await run_turn(
        services, user_id=user, session_id=None, message="garden", publisher=InMemoryPublisher()
    )

    rows = await stored(db, turn.started.plan_id)
    assert rows.steps[1].status == "failed"
    assert "answered in text 3 times in a row instead of calling a tool" in (
        rows.steps[1].result or rows.steps[1].error or ""
    )
    assert await titles(db, user) == []


@pytest.mark.parametrize(
    ("failure", "told", "logged"),
    [
        (insufficient_balance(), "account has no balance left", "has no balance left: top it up"),
        (invalid_key("sk-test"), "refused Parley's key", "Check DEEPSEEK_API_KEY / LLM_API_KEY"),
    ],
)
async def test_an_account_problem_tells_the_user_plainly_and_the_operator_what_to_fix(
    db: Database,
    make_services: MakeServices,
    fake: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
    failure: ScriptItem,
    told: str,
    logged: str,
) -> None:
    services = deepseek(make_services, "auto", "disabled", llm_max_retries=3)
    user = await make_user(db)
    fake.script(failure)

    with caplog.at_level(logging.ERROR, logger="shared.llm.openai_client"):
        turn = await run_turn(
            services, user_id=user, session_id=None, message="hello", publisher=InMemoryPublisher()
        )

    assert turn.plan.status == "failed" and len(fake.requests) == 1  # never retried
    error = turn.plan.error or ""
    assert told in error and "saved" in error
    assert "DEEPSEEK_API_KEY" not in error and "LLM_" not in error  # settings: the operator's
    assert any(logged in record.getMessage() for record in caplog.records)


async def test_a_turn_that_fails_after_writing_says_what_it_changed(
    db: Database, make_services: MakeServices, script: Script
) -> None:
    services = deepseek(make_services, "auto", "disabled")
    user = await make_user(db)
    refused = error(
        400, "The `reasoning_content` in the thinking mode must be passed back to the API."
    )
    script.planner(plan_call(TWO_STEPS), refused)
    script.step(FIND, reply(tool_call("list_tasks")), complete_with_results("Tasks"))
    script.step(
        WRITE,
        reply(tool_call("create_task", title="Buy seeds")),
        reply(tool_call("complete", result="Created")),
        kind="planner_step",
    )

    turn = await run_turn(
        services, user_id=user, session_id=None, message="garden", publisher=InMemoryPublisher()
    )

    assert turn.plan.status == "failed"
    error_text = turn.plan.error or ""
    assert "must be passed back to the API" in error_text  # the API's own words
    assert 'this turn made these changes, which stay: create_task ("Buy seeds")' in error_text


async def test_a_step_that_fails_after_writing_says_what_it_changed(
    db: Database, make_services: MakeServices, script: Script
) -> None:
    services = deepseek(make_services, "auto", "disabled")
    user = await make_user(db)
    script.planner(plan_call(TWO_STEPS), reply("The step failed after creating the task."))
    script.step(FIND, reply(tool_call("list_tasks")), complete_with_results("Tasks"))
    script.step(
        WRITE,
        reply(tool_call("create_task", title="Buy seeds")),
        error(400, "Invalid max_tokens value"),
        kind="planner_step",
    )

    turn = await run_turn(
        services, user_id=user, session_id=None, message="garden", publisher=InMemoryPublisher()
    )

    rows = await stored(db, turn.started.plan_id)
    assert turn.plan.status == "completed" and rows.steps[1].status == "failed"
    said = rows.steps[1].error or ""
    assert said.startswith("The language model refused the request:")
    assert 'this step made these changes, which stay: create_task ("Buy seeds")' in said
    assert await titles(db, user) == ["Buy seeds"]
