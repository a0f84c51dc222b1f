"""What the model produces is stored whatever it contains, and a turn always ends.

Postgres text and jsonb cannot hold U+0000: a NUL from the model is replaced by U+FFFD before
anything is stored. An unexpected error in a turn ends the plan `failed` with `error` and `done`
events, so no resume pays for the same model calls to fail the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from local.deepseek import FakeModelServer, error, raw_tool_call, reply, tool_call
from shared.agents.planner.planner_loop import ANSWER_CUT, ANSWER_FILTERED, NO_ANSWER
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.events import Event
from shared.services import Services
from shared.tools.mcp_source import REPLACED_NOTE
from shared.tools.mcp_source import _payload as mcp_payload
from shared.tools.schema import JsonObject
from shared.tools.tool_registry import ExternalTool
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.holds import scalar
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored, types

NUL, MARK, SURROGATE = "\x00", "\ufffd", "\udfff"


async def test_nul_in_the_planners_output_is_replaced_and_the_turn_goes_on(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(
        reply(tool_call("create_task", title=f"Buy{NUL}milk"), tool_call(f"list{NUL}tasks")),
        reply(f"Added{NUL}.", reasoning=f"thinking{NUL}"),
    )
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=user, session_id=None, message="add milk", publisher=memory
    )

    assert (turn.plan.status, turn.plan.answer) == ("completed", f"Added{MARK}.")
    title = await scalar(db, "SELECT title FROM tasks WHERE user_id = %s", user)
    assert title == f"Buy{MARK}milk"
    rows = await stored(db, turn.started.plan_id)
    tool_rows = {m.tool_name: m for m in rows.messages if m.role == "tool"}
    assert set(tool_rows) == {"create_task", f"list{MARK}tasks"}
    assert "unknown_tool" in tool_rows[f"list{MARK}tasks"].content  # the model is told
    answer = rows.messages[-1]
    assert (answer.content, answer.reasoning_content) == (f"Added{MARK}.", f"thinking{MARK}")
    tokens = "".join(str(e.data["text"]) for e in memory.events if e.type == "token")
    assert NUL not in tokens and MARK in tokens
    assert types(memory)[-1] == "done"


async def test_nul_in_an_executors_output_is_replaced_and_the_plan_completes(
    db: Database, services: Services, script: Script
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Garden")
    script.planner(reply(tool_call("create_plan", **ONE_STEP)), reply("Done."))
    script.step(
        LOOKUP,
        reply(tool_call("list_tasks", query=f"Gar{NUL}den")),
        reply(tool_call("complete", result=f"One{NUL} task")),
    )
    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    rows = await stored(db, turn.started.plan_id)
    said = rows.dialogue[rows.threads[0].id]
    call = next(m for m in said if m.tool_name == "list_tasks")  # answered in its row
    assert turn.plan.status == "completed"
    assert call.tool_args == {"query": f"Gar{MARK}den"}
    assert rows.steps[0].result == f"One{MARK} task"


class FailsOnce(InMemoryPublisher):
    """A publisher with a bug: the first `tool_result` event it is given raises."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def publish(self, events: Sequence[Event]) -> None:
        if not self.failed and any(e.type == "tool_result" for e in events):
            self.failed = True
            raise ValueError("a bug, not a lost connection")
        await super().publish(events)


async def test_an_unexpected_error_ends_the_plan_failed_with_error_and_done(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(reply(tool_call("list_tasks")), reply("never asked"))
    publisher = FailsOnce()

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=publisher
    )

    assert turn.plan.status == "failed"
    assert turn.plan.error is not None and "unexpected error" in turn.plan.error
    assert "a bug" not in turn.plan.error  # no internals reach the user
    assert types(publisher)[-2:] == ["error", "done"]
    status = await scalar(db, "SELECT status FROM agent_plans WHERE id = %s", turn.started.plan_id)
    assert status == "failed"
    asked = len(requests_of(fake, "planner"))
    again = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=turn.started.plan_id
    )
    assert again.status == "failed" and len(requests_of(fake, "planner")) == asked


@pytest.mark.parametrize("bad", [NUL, "\udfff"], ids=["nul", "lone-surrogate"])
async def test_a_model_error_whose_message_holds_a_nul_still_ends_the_plan(
    db: Database, services: Services, script: Script, bad: str
) -> None:
    """Providers echo input in their error messages; a NUL (or a lone surrogate, which has no
    UTF-8 encoding) there must not keep the plan `executing` (every resume would pay for the
    call and fail the same way). `readable` makes the message storable."""
    user = await make_user(db)
    script.planner(error(400, f"bad input near {bad} here"))
    memory = InMemoryPublisher()

    turn = await run_turn(services, user_id=user, session_id=None, message="hi", publisher=memory)

    assert turn.plan.status == "failed" and types(memory)[-2:] == ["error", "done"]
    assert turn.plan.error is not None and f"bad input near {MARK} here" in turn.plan.error
    status = await scalar(db, "SELECT status FROM agent_plans WHERE id = %s", turn.started.plan_id)
    assert status == "failed"


async def _answers_with_a_nul(arguments: JsonObject) -> JsonObject:
    """What an MCP tool's call gives the executor: the server's result, turned into a payload
    by `mcp_source` (as `McpServer.call` does)."""
    text = TextContent(type="text", text=f"from the server{NUL}!{SURROGATE}")
    return mcp_payload(CallToolResult(content=[text]))


async def test_nul_in_an_external_tools_result_is_replaced_and_the_step_completes(
    db: Database, make_services: MakeServices, script: Script
) -> None:
    services = make_services()
    services.tools.add(
        ExternalTool(
            name="ext_read",
            description="Reads an external source.",
            input_schema={"type": "object", "properties": {}},
            access="read",
            call=_answers_with_a_nul,
        )
    )
    user = await make_user(db)
    step = {
        "step_number": 1,
        "description": "Read ext",
        "assignee": "executor",
        "tools": ["ext_read"],
    }
    plan = {"goal": "Read it", "steps": [step]}
    script.planner(reply(tool_call("create_plan", **plan)), reply("Done."))
    script.step("Read ext", reply(tool_call("ext_read")), reply(tool_call("complete", result="ok")))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="read", publisher=InMemoryPublisher()
    )

    rows = await stored(db, turn.started.plan_id)
    assert turn.plan.status == "completed"
    assert (rows.steps[0].status, rows.steps[0].result) == ("completed", "ok")
    (result,) = [
        m
        for m in rows.dialogue[rows.thread_of(1).id]
        if m.tool_name == "ext_read" and m.message_type == "tool_result"
    ]
    assert json.loads(result.content)["text"] == f"from the server{MARK}!{MARK}"
    assert json.loads(result.content)["replaced"] == REPLACED_NOTE


@pytest.mark.parametrize(
    ("scripted", "says"),
    [
        (reply("The answer is", finish_reason="length"), ANSWER_CUT),
        (reply(finish_reason="content_filter"), ANSWER_FILTERED),
        (reply(reasoning="Let me think."), NO_ANSWER),
        (reply(reasoning="Let me think.", finish_reason="length"), NO_ANSWER),
        (reply(" \n "), NO_ANSWER),
    ],
    ids=[
        "cut at the output limit",
        "content filter",
        "reasoning only",
        "the output limit spent on reasoning",
        "whitespace only",
    ],
)
async def test_an_answer_the_model_cut_short_or_left_empty_says_so(
    db: Database, services: Services, script: Script, scripted: Any, says: str
) -> None:
    script.planner(scripted)
    memory = InMemoryPublisher()
    turn = await run_turn(
        services, user_id=await make_user(db), session_id=None, message="hi", publisher=memory
    )
    answer = turn.plan.answer or ""
    assert turn.plan.status == "completed" and answer.endswith(says)
    assert answer.strip() == says or answer.startswith("The answer is")
    streamed = "".join(str(e.data["text"]) for e in memory.events if e.type == "token")
    assert streamed.endswith(says)  # the live view says it too


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        ('{"title": "a", "x": ' + "[" * 300 + "]" * 300 + "}", "nested more than 32 levels"),
        ('{"x": ' + "[" * 20_000 + "]" * 20_000 + "}", "nested more than 32 levels"),
        (
            '{"title": "' + "a" * 3000 + '", "x": ' + "[" * 40 + "]" * 40 + "}",
            "nested more than 32 levels",
        ),
        ("[" + "1, " * 1500 + "1]", "must be a JSON object, got list"),
        ('{"title": "' + "a" * 1_000_000 + '"}', "at most 60000 are taken"),
    ],
    ids=[
        "past pydantic's limit",
        "past json's",
        "long and deep",
        "a long list",
        "a megabyte of valid JSON",
    ],
)
async def test_unusable_arguments_are_answered_with_their_reason_and_the_turn_goes_on(
    db: Database,
    services: Services,
    script: Script,
    fake: FakeModelServer,
    arguments: str,
    told: str,
) -> None:
    """The model is told why, and gets back only the first 2,000 characters of what it wrote,
    so the turn fits its budget again; the row keeps the call whole."""
    script.planner(reply(raw_tool_call("create_task", arguments)), reply("Could not add it."))
    turn = await run_turn(
        services,
        user_id=await make_user(db),
        session_id=None,
        message="add",
        publisher=InMemoryPublisher(),
    )

    assert (turn.plan.status, turn.plan.answer) == ("completed", "Could not add it.")
    rows = await stored(db, turn.started.plan_id)
    (result,) = [m for m in rows.messages if m.role == "tool"]
    assert told in result.content  # the model is told
    replayed = [
        c["function"]["arguments"]
        for m in fake.requests[1].body["messages"]
        for c in m.get("tool_calls") or ()
    ]
    assert len(replayed) == 1 and len(replayed[0]) <= min(len(arguments), 2100)
    (call,) = [m for m in rows.messages if m.role == "assistant" and m.tool_calls]
    assert call.tool_calls is not None and call.tool_calls[0]["function"]["arguments"] == arguments
