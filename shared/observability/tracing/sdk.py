"""The OpenTelemetry SDK behind `shared.observability.tracing`, imported only when tracing is on.

A tracer provider of Parley's own (the process-wide one of the OpenTelemetry API is left
alone), spans batched and exported over OTLP/HTTP (protobuf) — or printed (`console`) — and the
W3C trace-context propagator. The sampler is the SDK's, from `OTEL_TRACES_SAMPLER` (default:
every trace, children following their parent's decision); the resource names the service
(`OTEL_SERVICE_NAME`, default `parley-<function>`) and, on Lambda, the function and region;
`OTEL_RESOURCE_ATTRIBUTES` adds to it. The other `OTEL_EXPORTER_OTLP_*` variables (timeout,
compression, certificates) are read by the exporter itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.re import parse_env_headers

if TYPE_CHECKING:
    from shared.kernel.settings import Settings
    from shared.observability.tracing import Attributes, Kind, Span

__all__ = ["SpanExporter", "Tracing", "build"]

log = logging.getLogger(__name__)
KINDS = {
    "internal": SpanKind.INTERNAL,
    "server": SpanKind.SERVER,
    "client": SpanKind.CLIENT,
    "producer": SpanKind.PRODUCER,
    "consumer": SpanKind.CONSUMER,
}
PROTOCOL = "http/protobuf"
"""The one OTLP protocol Parley exports with (gRPC's client would weigh on every cold start)."""
FLUSH_MILLIS = 3000
"""Longest the end of an invocation waits for its spans to be exported."""
LAMBDA_RESOURCE = {
    "faas.name": "AWS_LAMBDA_FUNCTION_NAME",
    "faas.version": "AWS_LAMBDA_FUNCTION_VERSION",
    "faas.instance": "AWS_LAMBDA_LOG_STREAM_NAME",
    "cloud.region": "AWS_REGION",
}


class Tracing:
    """Spans recorded by one tracer provider and exported by its processor."""

    def __init__(self, provider: TracerProvider, *, capture_content: bool) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("parley")
        self.propagator = TraceContextTextMapPropagator()
        self.capture_content = capture_content

    @contextmanager
    def span(
        self,
        name: str,
        *,
        kind: Kind,
        attributes: Attributes | None,
        parent: Mapping[str, str] | None,
        expected: tuple[type[BaseException], ...],
    ) -> Iterator[Span]:
        context = self.propagator.extract(parent) if parent is not None else None
        with self.tracer.start_as_current_span(
            name,
            context=context,
            kind=KINDS[kind],
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as opened:
            try:
                yield opened
            except expected:
                raise  # how the work pauses or hands off: not a failure
            except Exception as exc:
                self.failed(opened, exc)
                raise

    def failed(self, span: Span, error: BaseException) -> None:
        if isinstance(span, trace.Span):
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.set_attribute("error.type", type(error).__name__)

    def current(self) -> Span:
        return trace.get_current_span()

    def carrier(self) -> dict[str, str]:
        found: dict[str, str] = {}
        self.propagator.inject(found)
        return found

    def ids(self) -> dict[str, str]:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return {}
        return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}

    def flush(self) -> None:
        if not self.provider.force_flush(FLUSH_MILLIS):
            log.warning("spans not exported within %d ms: some may be lost", FLUSH_MILLIS)

    def shutdown(self) -> None:
        self.provider.shutdown()


def build(settings: Settings, *, service: str, exporter: SpanExporter | None = None) -> Tracing:
    """Tracing as the settings configure it (`exporter`: spans go there instead)."""
    attributes: dict[str, str] = {"service.name": os.environ.get("OTEL_SERVICE_NAME") or service}
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        attributes["cloud.provider"] = "aws"
        attributes["cloud.platform"] = "aws_lambda"
        attributes |= {
            key: os.environ[name] for key, name in LAMBDA_RESOURCE.items() if os.environ.get(name)
        }
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(exporter or _exporter(settings)))
    return Tracing(
        provider, capture_content=settings.otel_instrumentation_genai_capture_message_content
    )


def _exporter(settings: Settings) -> SpanExporter:
    if settings.otel_traces_exporter == "console":
        return ConsoleSpanExporter()
    # the exporter: only when used: imported here, off the cold start
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or PROTOCOL
    )
    if protocol != PROTOCOL:
        log.error(
            "OTLP protocol %r is not supported: spans are sent as %s (the collector's "
            "HTTP port, 4318 by default)",
            protocol,
            PROTOCOL,
        )
    endpoint = settings.otel_exporter_otlp_traces_endpoint
    if endpoint is None and settings.otel_exporter_otlp_endpoint:
        endpoint = f"{settings.otel_exporter_otlp_endpoint}/v1/traces"  # as the spec appends it
    headers = settings.otel_exporter_otlp_headers
    return OTLPSpanExporter(
        endpoint=endpoint,  # None: the exporter's own default (http://localhost:4318/v1/traces)
        headers=parse_env_headers(headers.get_secret_value(), liberal=True) if headers else None,
    )
