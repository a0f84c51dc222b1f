"""Nothing shortens what a model sees without telling it what was left out and how to get it —
one test per path (tool results cut and history dropped to fit a budget: test_budgets; read
tools' pages: tests/tools/test_paging)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import prompts
from shared.agents.planner.plan_checks import MAX_PROBLEMS, read_plan
from shared.db import Database, chats
from shared.db.records import ChatMessage
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.events import Event
from shared.llm import ToolCall
from shared.llm.tokens import DeepSeekTokenizer
from shared.tools import builtin_registry
from shared.tools.mcp_source import MAX_ERROR_CHARS, OMITTED_NOTE, _payload
from shared.tools.mcp_source import _payload as mcp_payload
from shared.tools.schema import JsonObject
from shared.tools.tool_registry import ExternalTool
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.shared.agents.test_resume import Crash
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import add_exchanges, make_session, make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis
from tests.support.scripting import Script, delegation, requests_of
from tests.support.stored_rows import Stored, stored

LONG = "The supplier quoted 40 cabinets, 3 worktops, delivery in week 12, and more. " * 60
FIRST, SECOND = "Collect every quote", "Compare the quotes"
CHAIN: dict[str, Any] = {
    "goal": "Compare quotes",
    "steps": [
        {"step_number": 1, "description": FIRST, "assignee": "executor", "tools": ["list_tasks"]},
        {
            "step_number": 2,
            "description": SECOND,
            "assignee": "executor",
            "tools": ["list_tasks"],
            "depends_on": [1],
        },
    ],
}


async def test_a_conversation_longer_than_what_is_loaded_says_so(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services()
    user = await make_user(db)
    session = await make_session(db, user)
    await add_exchanges(db, session, [(f"Q{n}", f"A{n}") for n in range(101)])
    script.planner(reply("Noted."))

    await run_turn(
        services,
        user_id=user,
        session_id=session.id,
        message="And now?",
        publisher=InMemoryPublisher(),
    )

    (sent,) = fake.requests
    first = str(sent.messages[1]["content"])
    assert first.startswith("(Note: messages before the last 200 of this chat are not shown.")
    assert first.endswith("\n\nQ1")  # the oldest loaded message, whole after the note


async def test_a_dependency_result_cut_in_a_delegation_says_how_much_and_how_to_get_it(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(executor_token_budget=2_000)  # a delegation may fill 500 tokens
    user = await make_user(db)
    script.planner(plan_call(CHAIN), synthesis)
    script.step(SECOND, reply(tool_call("complete", result="Compared.")))  # names step 1 too
    script.step(FIRST, reply(tool_call("complete", result=LONG)))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="quotes?", publisher=InMemoryPublisher()
    )

    (second,) = requests_of(fake, "executor", SECOND)
    task = delegation(second)
    assert "tokens are left out here; ask_planner for it if you need it.]" in task
    assert LONG[:200] in task and LONG not in task
    step = next(s for s in (await stored(db, turn.started.plan_id)).steps if s.step_number == 2)
    assert step.result is not None and step.result.startswith("Compared.\n\n(Note: ")
    assert "tokens of step 1's result, in its task" in step.result  # the record says so too


async def test_a_timed_out_step_says_which_results_its_partial_result_leaves_out(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(executor_max_turns=4, executor_token_budget=1_500)
    user = await make_user(db)
    for n in range(30):
        await make_task(db, user, title=f"Task {n} " + "detail " * 20)
    script.planner(plan_call(ONE_STEP), synthesis)
    calls = [
        reply(tool_call("list_tasks", limit=30, sort_by=s))
        for s in ("created_at", "priority", "start_date", "open_first")
    ]
    script.step(LOOKUP, *calls)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    (step,) = (await stored(db, turn.started.plan_id)).steps
    assert step.result is not None
    assert step.result.startswith(
        "Partial result (the step reached its limit of 4 turns "
        "before completing); the last 3 of the 4 tool results it "
        "saw, the first 1 left out:"
    )
    assert "tokens are left out here; ask the user to retry" in step.result


async def test_the_planner_answering_a_question_is_told_what_of_a_long_result_is_left_out(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(planner_token_budget=6_000)  # two results may fill 1500 each
    user = await make_user(db)
    script.planner(plan_call(CHAIN), synthesis)
    script.step(
        SECOND,
        reply(tool_call("ask_planner", question="Which quote is cheapest?")),
        reply(tool_call("complete", result="Compared.")),
    )
    script.step(FIRST, reply(tool_call("complete", result=LONG * 2)))
    script.answers(reply("The first."))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="quotes?", publisher=InMemoryPublisher()
    )

    assert [s.status for s in (await stored(db, turn.started.plan_id)).steps] == ["completed"] * 2
    (asked,) = requests_of(fake, "answer")
    context = str(asked.messages[-1]["content"])
    assert "tokens are left out here; answer from what is shown, or say what is missing.]" in (
        context
    )


async def test_an_executor_step_with_complete_data_has_no_note(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services()
    user = await make_user(db)
    await make_task(db, user, title="Small")
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("list_tasks")), complete_with_results("Tasks"))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    (step,) = (await stored(db, turn.started.plan_id)).steps
    assert step.result == "Tasks: Small"


def test_a_plan_with_many_problems_says_how_many_more_there_are(
    tokenizer: DeepSeekTokenizer,
) -> None:
    steps = [{"step_number": n, "description": "", "assignee": "nobody"} for n in range(1, 8)]
    arguments = json.dumps({"goal": "x", "steps": steps})
    call = ToolCall.parse(id="c1", name="create_plan", arguments_json=arguments)

    problems = read_plan(
        call, registry=builtin_registry(), counter=tokenizer, executor_budget=16_000
    )

    assert isinstance(problems, list) and len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == "and 4 more problems (fix these first)"


def test_a_long_mcp_error_says_how_much_was_left_out() -> None:
    from mcp.types import CallToolResult, TextContent

    result = CallToolResult(content=[TextContent(type="text", text="x" * 1500)], is_error=True)

    try:
        _payload(result)
    except Exception as exc:
        message = str(exc)
    assert message == "x" * MAX_ERROR_CHARS + "… [500 more characters of the error left out]"


async def _long_chat(db: Database, user: Any, turns: int) -> Any:
    session = await make_session(db, user)
    async with db.service() as conn:
        for n in range(turns):
            await chats.add_message(
                conn,
                session_id=session.id,
                user_id=user,
                role="user",
                content=f"Question {n}: {LONG[:1500]}",
            )
            await chats.add_message(
                conn,
                session_id=session.id,
                user_id=user,
                role="assistant",
                content=f"Answer {n}: {LONG[:1500]}",
                metadata={"kind": "answer"},
            )
    return session


def _answer(rows: Stored) -> ChatMessage:
    """The plan's own answer (the session holds earlier ones)."""
    return next(
        m for m in rows.messages if m.plan_id == rows.plan.id and m.metadata.get("kind") == "answer"
    )


async def test_the_final_answer_drops_old_history_before_cutting_this_turns_results(
    db: Database,
    make_services: MakeServices,
    script: Script,
    fake: FakeModelServer,
    tokenizer: DeepSeekTokenizer,
) -> None:
    services = make_services(planner_token_budget=3_000)
    user = await make_user(db)
    session = await _long_chat(db, user, 6)  # ~3,700 tokens of history
    result = LONG[:4000]  # ~900 tokens: more than a quarter of the budget
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("complete", result=result)))

    turn = await run_turn(
        services,
        user_id=user,
        session_id=session.id,
        message="quotes?",
        publisher=InMemoryPublisher(),
    )

    _, final = requests_of(fake, "planner")
    assert "tools" not in final.body
    sent = [str(m["content"]) for m in final.messages]
    assert not any("Question 0:" in c or "Answer 0:" in c for c in sent)  # history went first
    assert result in sent[-1] and "[Left out" not in sent[-1]  # the results whole
    note = sent[1]
    assert note.startswith("(Note: ") and "earlier messages were left out" in note
    assert "Answer from what is shown and say what is missing.)" in note  # no tools to call
    assert "call the tools again" not in note
    answer = _answer(await stored(db, turn.started.plan_id))
    assert answer.content is not None and "left out" not in answer.content  # nothing it found
    assert any("earlier messages" in what for what in answer.metadata["left_out"])


async def test_a_final_answer_written_from_cut_results_says_so_and_so_does_its_record(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(planner_token_budget=3_000)
    user = await make_user(db)
    session = await _long_chat(db, user, 2)
    memory = InMemoryPublisher()
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("complete", result=LONG * 4)))  # ~4,300 tokens

    turn = await run_turn(
        services, user_id=user, session_id=session.id, message="quotes?", publisher=memory
    )

    _, final = requests_of(fake, "planner")
    sent = [str(m["content"]) for m in final.messages]
    assert not any("Question 0:" in c for c in sent)  # the history went before the cut
    results = sent[-1]
    assert results.startswith(prompts.PLAN_RESULTS)
    assert results.endswith("tokens. Answer from what is shown and say what is missing.]")
    assert "call create_plan again" not in results and "offset" not in results
    answer = _answer(await stored(db, turn.started.plan_id))
    assert answer.content is not None
    note = answer.content.rpartition("\n\n")[2]
    assert note.startswith("(Note: to fit the planner's context budget, ")
    assert "may be incomplete" in note
    left_out = answer.metadata["left_out"]
    assert any("tokens of a create_plan result" in what for what in left_out)
    assert any("earlier messages" in what for what in left_out)
    (done,) = [e for e in memory.events if e.type == "done"]
    assert str(done.data["answer"]).endswith(note)  # what the user is shown says so too
    streamed = "".join(str(e.data["text"]) for e in memory.events if e.type == "token")
    assert streamed.endswith(note)


class _CrashOnSecondResult(InMemoryPublisher):
    """The process dies right after the step's second tool result is stored."""

    def __init__(self) -> None:
        super().__init__()
        self.results = 0

    async def publish(self, events: Sequence[Event]) -> None:
        for event in events:
            if event.type == "agent_message" and event.data["message_type"] == "tool_result":
                self.results += 1
                if self.results == 2:
                    raise Crash("died after storing the second tool result")
        await super().publish(events)


async def test_a_resumed_step_still_says_what_its_earlier_prompts_left_out(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(executor_token_budget=1_500, executor_max_turns=2)
    user = await make_user(db)
    for n in range(20):
        await make_task(db, user, title=f"Task {n} " + "detail " * 30)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(
        LOOKUP,
        reply(tool_call("list_tasks", limit=20)),  # cut in the next prompt
        reply(tool_call("list_tasks", limit=1)),
    )
    dying = _CrashOnSecondResult()

    with pytest.raises(Crash):
        await run_turn(services, user_id=user, session_id=None, message="tasks?", publisher=dying)
    plan_id = next(e.plan_id for e in dying.events if e.plan_id is not None)
    assert plan_id is not None
    calls = len(requests_of(fake, "executor"))
    assert "[Left out to fit your context budget" in str(fake.requests[-1].messages[-1]["content"])

    outcome = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert outcome.status == "completed"
    assert len(requests_of(fake, "executor")) == calls  # the resumed step hit its turn limit
    (step,) = (await stored(db, plan_id)).steps
    assert step.result is not None and step.result.startswith(
        "Partial result (the step reached its limit of 2 turns"
    )
    assert "did not see everything it read — the last " in step.result  # as a first run would
    assert "tokens of a list_tasks result" in step.result


async def _answers_with_an_image(arguments: JsonObject) -> JsonObject:
    """What an MCP tool's call gives the executor when the server sends text and an image."""
    image = ImageContent(type="image", data="aGk=", mime_type="image/png")
    blocks: list[Any] = [TextContent(type="text", text="the chart:"), image]
    return mcp_payload(CallToolResult(content=blocks))


async def test_content_an_mcp_server_sent_that_the_model_cannot_see_is_named_to_it(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services()
    services.tools.add(
        ExternalTool(
            name="ext_chart",
            description="Draws a chart.",
            access="read",
            input_schema={"type": "object", "properties": {}},
            call=_answers_with_an_image,
        )
    )
    user = await make_user(db)
    step = {"description": "Get the chart", "tools": ["ext_chart"]}
    script.planner(plan_call({"steps": [step]}), synthesis)
    done = reply(tool_call("complete", result="A chart (an image I could not see)."))
    script.step("Get the chart", reply(tool_call("ext_chart")), done)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="chart?", publisher=InMemoryPublisher()
    )

    assert turn.plan.status == "completed"
    _, second = requests_of(fake, "executor")
    seen = json.loads(str(second.messages[-1]["content"]))
    assert seen["text"] == "the chart:"
    assert seen["omitted_content"] == OMITTED_NOTE.format(kinds="1 image")
    assert "left out" in seen["omitted_content"]
