"""A turn's spans in one process: the plan run, its model calls and tools; the prompt and the
answer only when the operator opts in (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from local.deepseek import reply, tool_call
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.kernel.settings import Settings
from shared.observability import tracing
from shared.services import Services
from tests.support.domain_rows import make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script
from tests.support.stored_rows import stored

MESSAGE = "Which tasks mention the aquarium?"


@pytest.fixture(params=[False, True], ids=["default", "opted in"])
def spans(request: pytest.FixtureRequest) -> Iterator[tuple[InMemorySpanExporter, bool]]:
    """Tracing on, spans kept in memory; the prompt and answer captured or not (the param)."""
    exporter, captured = InMemorySpanExporter(), bool(request.param)
    settings = Settings(otel_instrumentation_genai_capture_message_content=captured)
    assert tracing.start(settings, service="parley-test", exporter=exporter)
    try:
        yield exporter, captured
    finally:
        tracing.stop()


async def test_a_tool_turn_is_a_plan_run_with_its_model_and_tool_calls(
    db: Database,
    services: Services,
    script: Script,
    spans: tuple[InMemorySpanExporter, bool],
) -> None:
    exporter, captured = spans
    user = await make_user(db)
    await make_task(db, user, title="Clean the aquarium")
    script.planner(reply(tool_call("list_tasks")), reply("One: Clean the aquarium."))
    turn = await run_turn(
        services, user_id=user, session_id=None, message=MESSAGE, publisher=InMemoryPublisher()
    )
    tracing.flush()
    finished = exporter.get_finished_spans()
    found = {span.name: span for span in finished}
    runs = [s for s in finished if s.name == "invoke_agent planner"]
    calls = [s for s in finished if s.name == "chat test-planner"]
    (run,), tool = runs, found["execute_tool list_tasks"]
    assert len(calls) == 2
    assert {c.parent.span_id for c in calls if c.parent} == {run.context.span_id}
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert dict(run.attributes or {})["parley.plan.status"] == "completed"
    rows = await stored(db, turn.started.plan_id)
    assert rows.plan.trace_id == f"{run.context.trace_id:032x}"

    everything = json.dumps([dict(s.attributes or {}) for s in finished])
    assert (MESSAGE in everything) is captured
    assert ("Clean the aquarium" in everything) is captured  # the tool's result, the answer
    if captured:
        sent = json.loads(str((calls[0].attributes or {})["gen_ai.input.messages"]))
        assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": MESSAGE}]}
        answered = json.loads(str((calls[1].attributes or {})["gen_ai.output.messages"]))
        assert {"type": "text", "content": "One: Clean the aquarium."} in answered[0]["parts"]
