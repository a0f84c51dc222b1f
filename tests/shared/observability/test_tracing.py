"""Tracing: off by default and free when off; on, spans exported over OTLP/HTTP as configured.

The cold-start guard is in a fresh process, as a Lambda init is: importing the chat handler
with tracing off loads none of the SDK or its exporter (only the OpenTelemetry API FastAPI
itself imports); on, they load at init. Exports go to a local OTLP receiver
(`tests.support.otlp_receiver`) through the SDK's real exporter.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

from shared.kernel.settings import Settings
from shared.observability import logs, tracing
from tests.support.otlp_receiver import otlp_receiver

FRESH = """
import json, logging, sys
logging.basicConfig(level=logging.ERROR, stream=sys.stdout, format="%(levelname)s %(message)s")
for blocked in sys.argv[1:]:
    sys.modules[blocked] = None  # as if not installed
from functions.chat.handler import handler
from shared.observability import tracing
event = json.load(open("tests/support/lambda_events/agent_planner_health.json"))
event["rawPath"] = event["requestContext"]["http"]["path"] = "/health"
print(json.dumps({
    "enabled": tracing.enabled(),
    "otel": sorted({".".join(m.split(".")[:2]) for m in sys.modules
                    if m.split(".")[0] == "opentelemetry"}),
    "others": sorted({m.split(".")[0] for m in sys.modules} & {"requests", "google"}),
    "health": handler(event, None)["statusCode"],
}))
"""
SDK = ("opentelemetry.sdk", "opentelemetry.exporter")


def fresh(*blocked: str, **env: str) -> tuple[dict[str, Any], str]:
    """Import the chat handler in a new process with `env` (and `blocked` modules missing)."""
    done = subprocess.run(
        [sys.executable, "-c", FRESH, *blocked],
        env={**os.environ, "LOG_LEVEL": "ERROR", **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=os.getcwd(),
    )
    *logged, last = done.stdout.strip().splitlines()
    return json.loads(last), "\n".join(logged)


def test_off_by_default_the_chat_imports_nothing_of_the_sdk() -> None:
    found, logged = fresh()
    assert found["enabled"] is False and found["health"] == 200
    assert not [name for name in found["otel"] if name.startswith(SDK)]
    assert found["others"] == []  # the exporter's HTTP stack and protobuf stay out too
    assert logged == ""


def test_an_otlp_endpoint_turns_it_on_at_init() -> None:
    with otlp_receiver() as receiver:  # a collector that answers: the exit's flush is quick
        found, _ = fresh(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    assert found["enabled"] is True and found["health"] == 200
    assert {"opentelemetry.sdk", "opentelemetry.exporter"} <= set(found["otel"])


def test_without_the_sdk_installed_it_is_logged_and_the_function_serves() -> None:
    found, logged = fresh("opentelemetry.sdk", OTEL_TRACES_EXPORTER="otlp")
    assert found["enabled"] is False and found["health"] == 200
    assert logged == f"ERROR {tracing.SDK_MISSING}"


@pytest.mark.parametrize(
    ("settings", "on"),
    [
        ({}, False),
        ({"otel_exporter_otlp_endpoint": "http://collector:4318"}, True),
        ({"otel_exporter_otlp_traces_endpoint": "https://api.example.com/v1/traces"}, True),
        ({"otel_traces_exporter": "otlp"}, True),
        ({"otel_traces_exporter": "console"}, True),
        ({"otel_traces_exporter": "none", "otel_exporter_otlp_endpoint": "http://c:4318"}, False),
        ({"otel_sdk_disabled": True, "otel_traces_exporter": "otlp"}, False),
        ({"otel_exporter_otlp_endpoint": "", "otel_traces_exporter": ""}, False),
    ],
)
def test_which_settings_turn_it_on(settings: dict[str, Any], on: bool) -> None:
    assert tracing.wanted(Settings(**settings)) is on


def test_off_every_call_is_a_no_op() -> None:
    assert not tracing.enabled()
    with tracing.span("anything", attributes={"a": 1}, parent={"traceparent": "x"}) as span:
        span.set_attribute("b", 2)
        tracing.annotate({"c": 3})
    assert tracing.carrier() == {} and tracing.trace_id() is None and tracing.log_ids() == {}


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert tracing.start(Settings(), service="parley-test", exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.stop()


def test_a_carrier_continues_the_trace_in_the_next_function(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.span("send", kind="producer"):
        carrier = tracing.carrier()
        sent = tracing.trace_id()
    with tracing.span("process", kind="consumer", parent=carrier):
        assert tracing.trace_id() == sent
    with tracing.span("elsewhere"):
        assert tracing.trace_id() != sent  # no parent: a new trace
    tracing.flush()
    send, process, elsewhere = exported.get_finished_spans()
    assert carrier["traceparent"].split("-")[1] == sent
    assert process.parent is not None and process.parent.span_id == send.context.span_id
    assert elsewhere.parent is None


def test_a_failure_marks_the_span_and_an_expected_pause_does_not(
    exported: InMemorySpanExporter,
) -> None:
    class Paused(Exception):
        pass

    with pytest.raises(ValueError), tracing.span("fails"):
        raise ValueError("boom")
    with pytest.raises(Paused), tracing.span("pauses", expected=(Paused,)):
        raise Paused
    tracing.flush()
    fails, pauses = exported.get_finished_spans()
    assert fails.status.is_ok is False and fails.attributes is not None
    assert fails.attributes["error.type"] == "ValueError"
    assert pauses.status.is_unset and "error.type" not in (pauses.attributes or {})


def test_log_records_inside_a_span_carry_its_ids(
    exported: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    logs.install()
    with caplog.at_level(logging.INFO), tracing.span("work"):
        logging.getLogger("tests.tracing").info("inside")
        trace_id = tracing.trace_id()
    (record,) = [r for r in caplog.records if r.name == "tests.tracing"]
    assert logs.ids_of(record)["trace_id"] == trace_id


def test_spans_go_to_the_otlp_endpoint_with_the_configured_headers() -> None:
    """The SDK's own OTLP/HTTP exporter, configured from the settings (which the stage's
    secret may hold): `<endpoint>/v1/traces`, protobuf, the headers, the service's name."""
    with otlp_receiver() as receiver:
        headers = SecretStr("x-api-key=k%3Dv,team=parley")
        settings = Settings(
            otel_exporter_otlp_endpoint=receiver.url, otel_exporter_otlp_headers=headers
        )
        assert tracing.start(settings, service="parley-chat")
        try:
            with tracing.span("exported", attributes={"parley.plan.id": "p"}):
                pass
            tracing.flush()
        finally:
            tracing.stop()
    (export,) = receiver.exports
    assert [span.name for span in export.spans] == ["exported"]
    assert export.services == ["parley-chat"]
    assert export.headers["x-api-key"] == "k=v" and export.headers["team"] == "parley"
    assert export.headers["content-type"] == "application/x-protobuf"


def test_the_receiver_refuses_what_a_collector_refuses() -> None:
    import httpx

    with otlp_receiver() as receiver:
        assert httpx.post(f"{receiver.url}/v1/logs", content=b"").status_code == 404
        assert httpx.post(f"{receiver.url}/v1/traces", json={}).status_code == 415


def test_model_call_content_only_on_opt_in() -> None:
    from shared.kernel.usage import Usage
    from shared.llm import ChatRequest, Completion
    from shared.llm import spans as genai
    from shared.llm.messages import AssistantMessage, SystemMessage, UserMessage
    from shared.llm.pricing import TokenCounts

    request = ChatRequest("m", [SystemMessage("be brief"), UserMessage("secret plans")])
    completion = Completion(
        AssistantMessage("ok"),
        "stop",
        Usage(10, 2),
        TokenCounts(10, 2),
        "m",
        cost_known=True,
        usage_reported=True,
    )
    plain = {**genai.completion_attributes(completion)}
    assert "secret plans" not in json.dumps(plain) and plain["gen_ai.usage.input_tokens"] == 10
    content = genai.content_attributes(request, completion)
    assert json.loads(str(content["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "secret plans"}]}
    ]
    assert json.loads(str(content["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "be brief"}
    ]
    assert json.loads(str(content["gen_ai.output.messages"]))[0]["finish_reason"] == "stop"
