"""Following one turn across the three functions, as an operator would on AWS (issue 24).

A complex turn goes through the `sqs` transport under moto — chat's `202`, the planner's run,
each executor step, each resume — with tracing on (an in-memory exporter in place of OTLP) and
the Lambda runtime's own logging (`awslambdaric`: its handler and JSON formatter, as
`LoggingConfig: LogFormat: JSON` sets them up). The turn must be one trace, whose spans cover
every invocation and carry the GenAI attributes on model calls; every JSON log line of the turn
must carry the plan's id, and none the message's text, an answer, a token or a key.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from local.deepseek import FakeModelServer
from shared.db import Database
from shared.kernel.settings import Settings
from shared.observability import tracing
from tests.aws.test_queues import a_user_with_a_week
from tests.functions.test_handlers import load_event
from tests.support.cloud import Cloud, Function, body_of
from tests.support.llm_models import EXECUTOR_MODEL, PLANNER_MODEL
from tests.support.plan_calls import week_script
from tests.support.scripting import Script
from tests.support.stack import SERVICE_KEY
from tests.support.stored_rows import stored

Functions = dict[str, Function]
MESSAGE = "Plan my week around the dentist on Thursday (ref ZX-4471)"
INFRASTRUCTURE = ("werkzeug", "moto", "local.", "uvicorn", "tests.")
"""Loggers of the test's own servers (moto's SQS, the model twin), not of the functions."""


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test, every span kept in memory (the OTLP exporter's place)."""
    exporter = InMemorySpanExporter()
    assert tracing.start(Settings(), service="parley-test", exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.stop()


class LambdaLogSink:
    """Where the Lambda runtime's log handler writes: each formatted record, as a line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, message: str, frame_type: bytes | None = None) -> None:
        self.lines.append(message)

    def log_error(self, message_lines: list[str]) -> None:
        self.lines.append("\n".join(message_lines))


@pytest.fixture
def lambda_logs() -> Iterator[LambdaLogSink]:
    """The root logger as the Lambda runtime sets it up for `LogFormat: JSON` and application
    log level INFO (`awslambdaric.bootstrap._setup_logging`), writing to a sink; undone after."""
    from awslambdaric import bootstrap
    from awslambdaric.lambda_runtime_log_utils import LogFormat

    root = logging.getLogger()
    level, handlers, converter = root.level, list(root.handlers), logging.Formatter.converter
    sink = LambdaLogSink()
    bootstrap._setup_logging(LogFormat.JSON, "INFO", sink)
    try:
        yield sink
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        logging.Formatter.converter = converter
        bootstrap._GLOBAL_AWS_REQUEST_ID = None


async def run_turn(
    db: Database, cloud: Cloud, functions: Functions, script: Script, fake: FakeModelServer
) -> tuple[UUID, dict[str, Any], str]:
    """The week's complex turn from `POST /chat` to its answer: the plan's id, the 202's body
    and the user's access token it was sent with."""
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    event = load_event("chat_send_message.json", user)
    event["body"] = json.dumps({"message": MESSAGE})
    response = await functions["chat"].invoke(event)
    assert response["statusCode"] == 202, response
    deliveries = await cloud.drain(functions)
    accepted: dict[str, Any] = body_of(response)
    plan_id = UUID(accepted["plan_id"])
    assert (await stored(db, plan_id)).plan.status == "completed"
    assert len(deliveries) == 5  # run, 2 steps, 2 resumes
    return plan_id, accepted, event["headers"]["authorization"].removeprefix("Bearer ")


def by_name(found: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in found if span.name == name]


def attribute(span: ReadableSpan, key: str) -> Any:
    assert span.attributes is not None
    return span.attributes.get(key)


async def test_a_turn_through_the_queues_is_one_trace_with_genai_model_calls(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    spans: InMemorySpanExporter,
) -> None:
    plan_id, _, _ = await run_turn(db, cloud, functions, script, fake)
    found = list(spans.get_finished_spans())  # each invocation exported its spans as it ended

    trace_ids = {span.context.trace_id for span in found}
    assert len(trace_ids) == 1, [(s.name, s.context.trace_id) for s in found]
    trace_id = f"{trace_ids.pop():032x}"
    ids = {span.context.span_id for span in found}
    roots = [span for span in found if span.parent is None]
    assert all(span.parent.span_id in ids for span in found if span.parent is not None)

    # chat's request is the trace's root, answered 202 after queueing "run plan"
    (root,) = roots
    assert (root.name, root.kind) == ("POST /chat", SpanKind.SERVER)
    assert attribute(root, "http.response.status_code") == 202
    assert attribute(root, "faas.trigger") == "http"
    assert attribute(root, "parley.plan.id") == str(plan_id)

    # every queue delivery is a CONSUMER span whose parent is the PRODUCER span that sent it
    planner_queue = cloud.urls["planner"].rsplit("/", 1)[-1]
    executor_queue = cloud.urls["executor"].rsplit("/", 1)[-1]
    producers = {s.context.span_id: s for s in found if s.kind == SpanKind.PRODUCER}
    consumers = [s for s in found if s.kind == SpanKind.CONSUMER]
    assert len(consumers) == 5 and len(producers) == 5
    for consumer in consumers:
        assert consumer.parent is not None
        sent = producers[consumer.parent.span_id]
        assert attribute(sent, "messaging.message.id") == attribute(
            consumer, "messaging.message.id"
        )
        assert attribute(consumer, "faas.trigger") == "pubsub"
    sent_types = sorted(attribute(s, "parley.message.type") for s in producers.values())
    assert sent_types == ["resume_plan", "resume_plan", "run_plan", "run_step", "run_step"]
    assert len(by_name(found, f"process {planner_queue}")) == 3  # the run and two resumes
    assert len(by_name(found, f"process {executor_queue}")) == 2

    # the planner's runs, each executor step and the planner's own step
    after = await stored(db, plan_id)
    runs = by_name(found, "invoke_agent planner")
    plan_runs = [s for s in runs if attribute(s, "parley.step.id") is None]
    assert len(plan_runs) == 3
    assert {attribute(s, "parley.plan.id") for s in plan_runs} == {str(plan_id)}
    executors = by_name(found, "invoke_agent executor")
    assert {attribute(s, "parley.step.id") for s in executors} == {
        str(s.id) for s in after.steps if s.executor_required
    }
    own_steps = {attribute(s, "parley.step.id") for s in runs if s not in plan_runs}
    assert own_steps == {str(s.id) for s in after.steps if not s.executor_required}

    # model calls: GenAI conventions, no text by default
    calls = [s for s in found if s.name.startswith("chat ")]
    assert len(calls) == len(fake.requests) >= 6
    for call in calls:
        assert call.kind == SpanKind.CLIENT
        assert attribute(call, "gen_ai.operation.name") == "chat"
        assert call.name == f"chat {attribute(call, 'gen_ai.request.model')}"
        assert attribute(call, "gen_ai.usage.input_tokens") > 0
        assert attribute(call, "gen_ai.usage.output_tokens") > 0
        assert attribute(call, "gen_ai.usage.cache_read.input_tokens") >= 0
        assert attribute(call, "gen_ai.response.finish_reasons")
        assert attribute(call, "gen_ai.conversation.id") == str(after.plan.session_id)
        assert attribute(call, "gen_ai.input.messages") is None
    assert {attribute(call, "gen_ai.request.model") for call in calls} == {
        PLANNER_MODEL,
        EXECUTOR_MODEL,
    }
    assert {attribute(call, "gen_ai.agent.name") for call in calls} == {"planner", "executor"}
    tools = {attribute(s, "gen_ai.tool.name") for s in found if s.name.startswith("execute_tool")}
    assert tools == {"list_tasks", "get_calendar_events", "create_task"}

    # from the rows to the trace
    assert after.plan.trace_id == trace_id
    assert {e.trace_id for e in after.executions} == {trace_id}


async def test_the_turns_json_log_lines_carry_its_ids_and_no_text_or_secret(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    spans: InMemorySpanExporter,
    lambda_logs: LambdaLogSink,
) -> None:
    plan_id, accepted, user_token = await run_turn(db, cloud, functions, script, fake)
    after = await stored(db, plan_id)

    lines = [json.loads(line) for line in lambda_logs.lines]
    ours = [line for line in lines if not line["logger"].startswith(INFRASTRUCTURE)]
    invocations = {name: set(f.request_ids) for name, f in functions.items()}
    by_function = {
        name: [line for line in ours if line["requestId"] in ids]
        for name, ids in invocations.items()
    }
    assert all(by_function.values()), {k: len(v) for k, v in by_function.items()}
    assert sum(map(len, by_function.values())) == len(ours)  # each line is an invocation's
    for line in ours:
        assert line["plan_id"] == str(plan_id), line
        assert line["trace_id"] == after.plan.trace_id, line
    chat = by_function["chat"]
    assert {(line["session_id"], line["message_id"]) for line in chat} == {
        (accepted["session_id"], accepted["message_id"])
    }
    steps = [line for line in by_function["agent_executor"] if "step_id" in line]
    assert steps and {line["attempt"] for line in steps} == {1}
    assert {line["step_id"] for line in steps} == {
        str(s.id) for s in after.steps if s.executor_required
    }

    written = "\n".join(lambda_logs.lines)  # every line, the servers' too
    secrets = [
        MESSAGE,
        "dentist",
        after.answer.content,
        "Should done tasks count?",
        SERVICE_KEY,
        user_token,
        user_token.split(".")[2],
        "Bearer ",
    ]
    assert [secret for secret in secrets if secret in written] == []
