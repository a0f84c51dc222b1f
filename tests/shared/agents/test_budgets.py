"""Prompts stay within each agent's token budget, counted with the tokenizer that enforces it."""

from __future__ import annotations

from typing import Any

from local.deepseek import FakeModelServer, RecordedRequest, reply, tool_call
from shared.agents import prompts
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.llm.tokens import DeepSeekTokenizer, count_prompt
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import make_task
from tests.support.factories import add_exchanges, make_session, make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results, plan_call, synthesis
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored

PARAGRAPH = (
    "We talked about the garden, the quarterly report, the trip to Lisbon and who feeds the "
    "cat while we are away; then about the budget spreadsheet and the dentist. "
) * 8


def prompt_size(tokenizer: DeepSeekTokenizer, request: RecordedRequest) -> int:
    tools: list[dict[str, Any]] = request.body.get("tools") or []
    return count_prompt(tokenizer, request.messages, tools)


async def test_a_long_history_is_trimmed_to_the_planner_budget_keeping_system_and_request(
    db: Database,
    make_services: MakeServices,
    script: Script,
    fake: FakeModelServer,
    tokenizer: DeepSeekTokenizer,
) -> None:
    budget = 8_000
    services = make_services(planner_token_budget=budget)
    user = await make_user(db)
    first = await make_session(db, user)
    # ~30 earlier turns of ~300 tokens each: far over the budget
    await add_exchanges(
        db, first, [(f"Question {n}: {PARAGRAPH}", f"Answer {n}: {PARAGRAPH}") for n in range(30)]
    )
    script.planner(reply("Noted."))

    await run_turn(
        services,
        user_id=user,
        session_id=first.id,
        message="What did we decide about Lisbon?",
        publisher=InMemoryPublisher(),
    )

    (sent,) = fake.requests
    history = sum(tokenizer.count(f"Question {n}: {PARAGRAPH}") * 2 for n in range(30))
    assert history > 2 * budget
    assert prompt_size(tokenizer, sent) <= budget
    system, oldest, *rest = sent.messages
    assert system == {"role": "system", "content": prompts.with_date(prompts.PLANNER)}
    note, _, kept = str(oldest["content"]).partition("\n\n")  # the prefix stays cacheable
    assert note.startswith("(Note: ") and "earlier messages were left out" in note
    assert kept.startswith("Question ")
    assert rest[-1] == {"role": "user", "content": "What did we decide about Lisbon?"}
    contents = [str(m["content"]) for m in rest]
    assert any(c.startswith("Answer 29:") for c in contents)  # the newest history is kept
    assert not any(c.startswith("Question 0:") for c in contents)  # the oldest went first
    dropped = int(note.removeprefix("(Note: ").split()[0])
    assert dropped == 60 - len(rest)  # exactly the history not sent


async def test_an_executors_large_tool_result_is_cut_to_fit_its_small_budget(
    db: Database,
    make_services: MakeServices,
    script: Script,
    fake: FakeModelServer,
    tokenizer: DeepSeekTokenizer,
) -> None:
    services = make_services(executor_token_budget=1_500)
    user = await make_user(db)
    for n in range(20):
        await make_task(db, user, title=f"Task {n} " + "detail " * 30, description=PARAGRAPH)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("list_tasks", limit=20)), complete_with_results("Tasks"))

    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="all my tasks",
        publisher=InMemoryPublisher(),
    )

    first, second = requests_of(fake, "executor")
    assert prompt_size(tokenizer, first) <= 1_500 and prompt_size(tokenizer, second) <= 1_500
    result = str(second.messages[-1]["content"])
    assert second.messages[-1]["role"] == "tool"
    assert "[Left out to fit your context budget: the last " in result
    assert "call list_tasks again asking for less at once" in result  # how to get the rest
    assert second.messages[0]["role"] == "system" and second.messages[1]["role"] == "user"
    assert LOOKUP in str(second.messages[1]["content"])  # the delegation is kept whole
    step = (await stored(db, turn.started.plan_id)).steps[0]
    assert step.result is not None and step.result.startswith("Tasks: ")
    assert "did not see everything it read — the last " in step.result  # the record says so
    assert "tokens of a list_tasks result" in step.result
