"""When the model fails or is missing: a readable failure, and the user's message kept."""

from __future__ import annotations

import pytest

from local.deepseek import FakeModelServer, error
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.kernel.settings import Settings
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.llm_models import MODELS
from tests.support.plan_calls import plan_call
from tests.support.scripting import Script
from tests.support.stored_rows import of_type, stored, types
from tests.support.user_facing import assert_names_no_setting


async def test_a_model_that_keeps_failing_mid_plan_fails_it_readably_and_keeps_the_message(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    script.planner(plan_call(ONE_STEP), error(500, "upstream overloaded"))
    script.step(LOOKUP, error(500, "upstream overloaded"))
    memory = InMemoryPublisher()
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="my tasks please", publisher=memory
    )

    assert len(fake.requests) == 3  # plan, the executor's call, the synthesis: no more
    rows = await stored(db, turn.started.plan_id)
    assert rows.plan.status == "failed" and turn.plan.status == "failed"
    assert [m.content for m in rows.messages if m.role == "user"] == ["my tasks please"]
    (step,) = rows.steps
    assert step.status == "failed" and "language model call failed" in (step.error or "")
    assert rows.thread_of(1).status == "failed"
    assert {e.status for e in rows.executions} == {"failed"}
    (event,) = of_type(memory, "error")
    message = str(event.data["message"])
    assert "language model call failed" in message and "upstream overloaded" in message
    assert "Traceback" not in message and "Your message is saved" in message
    assert types(memory)[-2:] == ["error", "done"]
    assert memory.events[-1].data["status"] == "failed"


async def test_without_a_configured_model_the_turn_answers_with_what_to_set(
    db: Database,
    database_url: str,
    fake: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ("LLM_API_KEY", "DEEPSEEK_API_KEY", "LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    models = tmp_path_factory.mktemp("unconfigured") / "models.toml"
    models.write_text(MODELS)
    settings = Settings(database_url=database_url, llm_models_file=models)
    services = Services(settings, db=db)  # no client given: built from the settings
    memory = InMemoryPublisher()
    user = await make_user(db)

    turn = await run_turn(
        services, user_id=user, session_id=None, message="hello", publisher=memory
    )

    assert fake.requests == []
    answer = turn.plan.answer or ""
    assert answer.startswith("Parley cannot answer yet: no language model is configured.")
    assert_names_no_setting(answer)  # what to set is the operator's business: in the log
    assert any("DEEPSEEK_API_KEY" in r.getMessage() for r in caplog.records)
    rows = await stored(db, turn.started.plan_id)
    assert [(m.role, m.content) for m in rows.messages] == [
        ("user", "hello"),
        ("assistant", answer),
    ]
    assert rows.messages[1].metadata == {"kind": "configuration"}
    assert rows.plan.status == "failed" and rows.executions == []
    assert types(memory) == ["error", "done"]
    assert of_type(memory, "error")[0].data["code"] == "llm_not_configured"
    assert memory.events[-1].data["answer"] == answer
