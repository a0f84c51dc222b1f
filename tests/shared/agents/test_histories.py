"""Histories rebuilt from the tables are valid for DeepSeek, thinking mode included."""

from __future__ import annotations

import json

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents.history import plan_results
from shared.agents.prompts import PLAN_RESULTS
from shared.db import Database, chats, plans
from shared.dispatch.in_process import run_turn
from shared.usecases import chat_sessions
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.agent_services import MakeServices
from tests.support.factories import make_user
from tests.support.holds import as_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored


async def test_reasoning_is_stored_and_sent_back_as_deepseeks_thinking_mode_asks(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(llm_planner_model="test-thinker", llm_executor_model="test-thinker")
    script.planner(
        reply(tool_call("create_plan", **ONE_STEP), reasoning="Several lookups: plan it."),
        reply("Done.", reasoning="Summarise."),
    )
    script.step(
        LOOKUP,
        reply(tool_call("list_tasks"), reasoning="First list the tasks."),
        reply(tool_call("complete", result="No tasks."), reasoning="Nothing there."),
    )
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    assert turn.plan.status == "completed" and script.unscripted == []
    synthesis = requests_of(fake, "planner")[1]
    assert synthesis.messages[2]["tool_calls"][0]["function"]["name"] == "create_plan"
    # No tools, but this user turn called tools: its reasoning goes back (docs/deepseek.md).
    assert "tools" not in synthesis.body
    assert synthesis.messages[2]["reasoning_content"] == "Several lookups: plan it."
    executor = requests_of(fake, "executor")[1].messages  # tools offered: passed back
    assert executor[2]["reasoning_content"] == "First list the tasks."
    rows = await stored(db, turn.started.plan_id)
    assert rows.messages[1].reasoning_content == "Several lookups: plan it."
    first_call = rows.dialogue[rows.thread_of(1).id][1]
    assert (first_call.message_type, first_call.reasoning_content) == (
        "tool_result",  # the call, answered in its row
        "First list the tasks.",
    )


async def test_a_later_turn_sees_earlier_requests_and_answers_but_not_their_tool_traffic(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services()
    script.planner(reply(tool_call("list_tasks")), reply("You have no tasks."))
    user = await make_user(db)
    first = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    Script(fake).planner(reply("Still none."))

    await run_turn(
        services,
        user_id=user,
        session_id=first.started.session_id,
        message="and now?",
        publisher=InMemoryPublisher(),
    )

    later = fake.requests[-1].messages
    assert [(m["role"], m["content"]) for m in later[1:]] == [
        ("user", "tasks?"),
        ("assistant", "You have no tasks."),
        ("user", "and now?"),
    ]
    # The planner thinks (DeepSeek's default) and is offered tools: the past answer carries the
    # reasoning the twin sent with it, as DeepSeek's thinking-mode guide asks.
    assert later[2]["reasoning_content"] == "Thinking it through."
    assert [e.refused for e in fake.exchanges] == [None] * len(fake.exchanges)


async def test_a_plan_is_stored_once_and_read_back_whole_by_the_model_and_every_reader(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    """The accepted `create_plan` call is stored without its steps and its result without its
    text: the synthesis is sent both whole, and the API, the timeline and the transcript read
    them back from the plan's steps, as the planner was given them."""
    services = make_services()
    script.planner(reply(tool_call("create_plan", **ONE_STEP)), reply("Done."))
    script.step(LOOKUP, reply(tool_call("complete", result="No tasks.")))
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    plan_id = turn.started.plan_id
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT role, content, tool_calls, metadata FROM chat_messages "
            "WHERE plan_id = %s AND role <> 'user' ORDER BY seq",
            (plan_id,),
        )
        raw = await cur.fetchall()
        steps = await plans.list_steps(conn, plan_id=plan_id)
        read = await chats.list_plan_messages(conn, plan_id=plan_id)
        timeline = await (
            await conn.execute(
                "SELECT content FROM session_timeline WHERE plan_id = %s AND kind = 'tool'",
                (plan_id,),
            )
        ).fetchone()
    call, result = raw[0], raw[1]
    stored_arguments = json.loads(call["tool_calls"][0]["function"]["arguments"])
    assert stored_arguments == {"goal": "Look up tasks"}  # the steps are the plan's rows
    assert call["metadata"]["plan_steps"] == call["tool_calls"][0]["id"]
    assert result["content"] == ""
    text = plan_results(steps)
    assert text == "Step 1: completed\nResult: No tasks."
    step = {"step_number": 1, "description": LOOKUP, "tools": ["list_tasks"]}
    whole = {"goal": "Look up tasks", "steps": [step]}
    assert read[0].tool_calls is not None
    assert json.loads(read[0].tool_calls[0]["function"]["arguments"]) == whole
    assert read[1].content == text and timeline is not None and timeline["content"] == text
    synthesis = requests_of(fake, "planner")[1].messages
    assert json.loads(synthesis[2]["tool_calls"][0]["function"]["arguments"]) == whole
    assert synthesis[3]["content"] == f"{PLAN_RESULTS}\n\n{text}"


async def test_a_turn_of_two_calls_reads_back_as_one_assistant_message_with_both_results(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    """Only the turn's last call is answered in its own row (the row takes the result's
    number, so it must stay after the turn's first row); the first call's result is a row of
    its own. Read back, both are one assistant message and its two tool messages."""
    services = make_services(llm_executor_model="test-thinker")
    script.planner(reply(tool_call("create_plan", **ONE_STEP)), reply("Done."))
    script.step(
        LOOKUP,
        reply(
            tool_call("list_tasks"),
            tool_call("list_tasks", status=["done"]),
            reasoning="Open and done ones.",
        ),
        reply(tool_call("complete", result="No tasks."), reasoning="Nothing there."),
    )
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )

    assert turn.plan.status == "completed" and script.unscripted == []
    rows = await stored(db, turn.started.plan_id)
    said = rows.dialogue[rows.thread_of(1).id]
    assert [(m.message_type, m.sender_agent_id is not None) for m in said] == [
        ("delegation", True),
        ("tool_call", True),  # the first call: its result is a row of its own
        ("tool_result", False),
        ("tool_result", True),  # the last call, answered in its own row
        ("completion", True),
    ]
    assert said[3].tool_args == {"status": ["done"]} and said[1].reasoning_content
    second = requests_of(fake, "executor", LOOKUP)[1].messages
    calls = second[2]["tool_calls"]
    assert second[2]["reasoning_content"] == "Open and done ones."
    assert [m["role"] for m in second[3:]] == ["tool", "tool"]
    assert [m["tool_call_id"] for m in second[3:]] == [c["id"] for c in calls]
    assert json.loads(calls[1]["function"]["arguments"]) == {"status": ["done"]}


async def test_a_forked_session_sees_the_answers_it_was_forked_with(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    """A fork copies the user's messages and the answers (without their metadata's `kind`,
    which an answer is stored without anyway): the fork's next turn is given both."""
    services = make_services()
    script.planner(reply("Two tasks."))
    user = await make_user(db)
    first = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    assert first.plan.message_id is not None
    fork = await chat_sessions.fork_session(
        db, as_user(user), first.started.session_id, at_message_id=first.plan.message_id
    )
    Script(fake).planner(reply("Still two."))

    await run_turn(
        services,
        user_id=user,
        session_id=fork.id,
        message="and now?",
        publisher=InMemoryPublisher(),
    )

    later = fake.requests[-1].messages
    assert [(m["role"], m["content"]) for m in later[1:]] == [
        ("user", "tasks?"),
        ("assistant", "Two tasks."),
        ("user", "and now?"),
    ]
