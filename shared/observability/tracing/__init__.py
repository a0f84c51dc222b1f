"""Traces: OpenTelemetry spans across the three functions — off unless configured.

One user turn is one trace: the chat's request (its `202`), the planner's runs, each executor
step and each resume, with a span per function invocation, plan run, step, model call (GenAI
semantic conventions: `shared.llm.spans`) and tool call. The W3C trace context
(`traceparent`) travels between the functions in the SQS messages' attributes and the HTTP
invoker's headers (`carrier()` on the way out, `span(parent=...)` on the way in).

Off by default. `start` turns it on when the settings ask for an exporter: an OTLP endpoint
(`OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), or
`OTEL_TRACES_EXPORTER=otlp|console`; `OTEL_SDK_DISABLED=true` keeps it off. Only then is the
SDK imported (`shared.observability.tracing.sdk`, the optional `parley[otel]`, with its exporter:
~70 ms and ~250 modules at init, `bench.cold_start`). Off, Parley imports nothing of OpenTelemetry —
the functions load only the API FastAPI itself imports — and `span()` yields a span that records
nothing, `carrier()` is empty and `trace_id()` None.

Parley's spans go through a tracer provider of its own, not the process-wide one of the
OpenTelemetry API: FastAPI's built-in request telemetry, which uses that one, stays idle (the
SERVER span of a request is Parley's, `shared.observability.tracing.http_server`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from shared.kernel.settings import Settings
    from shared.observability.tracing.sdk import SpanExporter, Tracing

log = logging.getLogger(__name__)

Kind = Literal["internal", "server", "client", "producer", "consumer"]
AttributeValue = str | bool | int | float | list[str] | list[int]
Attributes = Mapping[str, AttributeValue]
SDK_MISSING = (
    "tracing is configured (OTEL_* settings) but the OpenTelemetry SDK is not installed "
    "(install parley[otel]; for Lambda, build the bundle with `infra/build.py --extra otel`): "
    "no spans are recorded"
)


class Span(Protocol):
    """What Parley's code does with a span (an OpenTelemetry span satisfies it)."""

    def set_attribute(self, key: str, value: Any) -> None: ...

    def set_attributes(self, attributes: Mapping[str, Any]) -> None: ...

    def update_name(self, name: str) -> None: ...


class _Unrecorded:
    """The span of tracing turned off: takes everything, keeps nothing."""

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def update_name(self, name: str) -> None:
        pass


UNRECORDED: Span = _Unrecorded()
_tracing: Tracing | None = None
_invocation: ContextVar[Attributes] = ContextVar("parley_invocation", default=MappingProxyType({}))


def wanted(settings: Settings) -> bool:
    """Whether the settings ask for traces (see the module docstring)."""
    if settings.otel_sdk_disabled:
        return False
    if settings.otel_traces_exporter is not None:
        return settings.otel_traces_exporter != "none"
    return bool(settings.otel_exporter_otlp_endpoint or settings.otel_exporter_otlp_traces_endpoint)


def start(settings: Settings, *, service: str, exporter: SpanExporter | None = None) -> bool:
    """Turn tracing on if the settings ask for it (or `exporter` is given: spans go there
    instead); whether it is on. Once per process: a second call changes nothing. Without the
    SDK installed it is logged (once) and stays off."""
    global _tracing
    if _tracing is not None:
        return True
    if exporter is None and not wanted(settings):
        return False
    try:
        from shared.observability.tracing.sdk import build  # the SDK: ~70 ms
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        log.error(SDK_MISSING)
        return False
    _tracing = build(settings, service=service, exporter=exporter)
    return True


def stop() -> None:
    """Export what is left and turn tracing off (the local stack's end, tests)."""
    global _tracing
    tracing, _tracing = _tracing, None
    if tracing is not None:
        tracing.shutdown()


def enabled() -> bool:
    return _tracing is not None


def flush() -> None:
    """Export the spans recorded so far, now: the end of a Lambda invocation, after which the
    environment may be frozen with them still in memory."""
    if _tracing is not None:
        _tracing.flush()


@contextmanager
def span(
    name: str,
    *,
    kind: Kind = "internal",
    attributes: Attributes | None = None,
    parent: Mapping[str, str] | None = None,
    expected: tuple[type[BaseException], ...] = (),
) -> Iterator[Span]:
    """A span around the block, the current span's child — or, given `parent` (a carrier: the
    `traceparent` an SQS message or HTTP request brought), that context's. An exception that
    leaves the block is recorded on it and marks it failed (`error.type`), unless it is one of
    the `expected` ones (how work pauses for an approval or hands off to a queue)."""
    if _tracing is None:
        yield UNRECORDED
        return
    with _tracing.span(
        name, kind=kind, attributes=attributes, parent=parent, expected=expected
    ) as opened:
        yield opened


@contextmanager
def invoked(attributes: Attributes) -> Iterator[None]:
    """Name the function invocation running now (`faas.*`: its id, trigger, cold start):
    the span a function's work begins with carries it (`invocation()`)."""
    token = _invocation.set(attributes)
    try:
        yield
    finally:
        _invocation.reset(token)


def invocation() -> Attributes:
    """The attributes `invoked` named for the current invocation (none off Lambda)."""
    return _invocation.get()


def failed(span: Span, error: BaseException) -> None:
    """Mark `span` failed by `error`, which its block handles itself (a queue message that
    will come back): the exception recorded, the status an error, `error.type` its class."""
    if _tracing is not None:
        _tracing.failed(span, error)


def annotate(attributes: Attributes) -> None:
    """Add attributes to the current span (what was learnt along the way: a turn's ids)."""
    if _tracing is not None:
        _tracing.current().set_attributes(attributes)


def carrier() -> dict[str, str]:
    """The current span's context as W3C headers (`traceparent`, `tracestate`), for a message
    or request leaving this function; empty when tracing is off."""
    return _tracing.carrier() if _tracing is not None else {}


def trace_id() -> str | None:
    """The current trace's id (32 hex digits), or None (tracing off, or outside any span)."""
    return _tracing.ids().get("trace_id") if _tracing is not None else None


def log_ids() -> dict[str, str]:
    """`trace_id` and `span_id` of the current span, for log records (empty: none)."""
    return _tracing.ids() if _tracing is not None else {}


def capture_content() -> bool:
    """Whether model-call spans carry the prompt and the answer (the operator opted in with
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`)."""
    return _tracing is not None and _tracing.capture_content
