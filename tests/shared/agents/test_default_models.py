"""With only an API key configured, a turn runs on DeepSeek's current models, each role with its
thinking setting sent as DeepSeek's `thinking` field, priced by the shipped registry."""

from __future__ import annotations

from decimal import Decimal

from pydantic import SecretStr

from local.deepseek import FakeModelServer, RecordedRequest, Reply, reply, tool_call
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import complete_with_results
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import stored


def thinking(text: str) -> Reply:
    """A planner reply in thinking mode (DeepSeek's V4 models think unless told not to)."""
    return reply(text, reasoning="Let me see.")


async def test_a_turn_with_nothing_but_a_key_uses_v4_pro_and_flash(
    db: Database,
    database_url: str,
    fake: FakeModelServer,
    script: Script,
    tokenizer: DeepSeekTokenizer,
) -> None:
    settings = Settings(
        database_url=database_url,
        llm_base_url=fake.base_url,
        llm_api_key=SecretStr("sk-test"),
        llm_max_retries=0,
    )
    services = Services(settings, db=db, tokens=tokenizer)  # the client is built from settings
    user = await make_user(db)
    await make_task(db, user, title="Write report")
    plan = reply(tool_call("create_plan", **ONE_STEP), reasoning="Two reads: delegate.")
    script.planner(plan, lambda request: thinking("Here you are."))
    script.step(LOOKUP, reply(tool_call("list_tasks")), complete_with_results("Tasks"))

    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="all my tasks",
        publisher=InMemoryPublisher(),
    )
    await services.aclose()

    assert turn.plan.status == "completed" and script.unscripted == []
    planner_calls = requests_of(fake, "planner")
    executor_calls = requests_of(fake, "executor")
    assert {r.model for r in planner_calls} == {"deepseek-v4-pro"}
    assert {r.model for r in executor_calls} == {"deepseek-flash"}
    assert all("thinking" not in r.body for r in planner_calls)  # auto: the model's default
    assert all(r.body["thinking"] == {"type": "disabled"} for r in executor_calls)
    synthesis: RecordedRequest = planner_calls[-1]
    plan_turn = next(m for m in synthesis.messages if m.get("tool_calls"))
    # The answer's call carries no tools, but its user turn called tools: passed back.
    assert plan_turn["reasoning_content"] == "Two reads: delegate."
    rows = await stored(db, turn.started.plan_id)
    assert [a.model for a in rows.agents] == ["deepseek-v4-pro", "deepseek-flash"]
    assert rows.plan.cost_usd > Decimal(0)  # priced from the shipped registry
