"""An OTLP/HTTP trace receiver on the loopback: what an OpenTelemetry collector would get.

For tests and benchmarks that export spans the way a deployment does (the SDK's OTLP/HTTP
exporter, protobuf): `POST /v1/traces` with `Content-Type: application/x-protobuf`, decoded
with OpenTelemetry's own protobuf definitions (`opentelemetry-proto`, which the exporter
depends on) and kept with the request's headers; anything else is answered 404 / 415, as a
collector's OTLP receiver does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class Export:
    """One export request: its headers (lower-cased names) and its spans."""

    headers: dict[str, str]
    spans: list[Any]
    """`opentelemetry.proto.trace.v1.trace_pb2.Span` messages, from every resource and scope."""
    services: list[str]
    """The `service.name` of each resource in the request."""


class OtlpReceiver:
    """Collects what exporters send; `url` is the base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`)."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.exports: list[Export] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def spans(self) -> list[Any]:
        with self._lock:
            return [span for export in self.exports for span in export.spans]

    def add(self, export: Export) -> None:
        with self._lock:
            self.exports.append(export)


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A receiver serving on a free loopback port until the block ends."""
    receiver: OtlpReceiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != PATH:
                self.send_error(404)
                return
            if self.headers.get("Content-Type") != PROTOBUF:
                self.send_error(415)
                return
            request = ExportTraceServiceRequest.FromString(body)
            spans = [
                span
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]
            services = [
                attribute.value.string_value
                for resource in request.resource_spans
                for attribute in resource.resource.attributes
                if attribute.key == "service.name"
            ]
            headers = {name.lower(): value for name, value in self.headers.items()}
            receiver.add(Export(headers, spans, services))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", PROTOBUF)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the handler would write a line to stderr per request: keep test output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = OtlpReceiver(server)
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
