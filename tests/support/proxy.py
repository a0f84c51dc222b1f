"""A keep-alive HTTP front for moto's server on the loopback, which records what crosses it.

moto's server (werkzeug's) closes every connection after its response; SQS keeps connections
open, and closes the ones it has held idle for a while. `Proxy` behaves like SQS there: it keeps
each client connection open (HTTP/1.1), hands every request on to moto unchanged on a
connection of its own, and answers with moto's response; `cut()` closes every open client
connection. It records each request as it arrived (`requests`) and counts the connections
clients opened (`connections`). `refuse(status, answer)` answers the next request itself, as
SQS answers a throttled or failed one; `gather(n)` holds requests until `n` are in flight.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}


@dataclass(frozen=True)
class Request:
    """One request as it crossed the wire (header names as the client spelled them)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Proxy:
    """Serves on `url`; forwards to `target` (`http://host:port`)."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self._target = (parts.hostname or "", parts.port or 80)
        self.requests: list[Request] = []
        self.connections = 0
        """Connections clients opened so far."""
        self._open: set[socket.socket] = set()
        self._refusals: list[tuple[int, dict[str, str]]] = []
        self._gathering: threading.Barrier | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._serving = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._serving.start()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self.cut()
        self._server.server_close()
        self._serving.join()

    def cut(self) -> None:
        """Close every open client connection (the client is told: FIN), as SQS closes the
        connections it held idle."""
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):  # the client has gone already
                sock.shutdown(socket.SHUT_RDWR)

    def refuse(self, status: int, answer: dict[str, str]) -> None:
        """Answer the next request with `status` and the JSON `answer`, not moto's."""
        with self._lock:
            self._refusals.append((status, answer))

    def gather(self, requests: int) -> None:
        """Hold each of the next `requests` requests until all of them have arrived (10 s at
        most: a client that sends them one after another fails instead of hanging)."""
        self._gathering = threading.Barrier(requests, timeout=10)

    def _refusal(self) -> tuple[int, dict[str, str]] | None:
        with self._lock:
            return self._refusals.pop(0) if self._refusals else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the connection stays open

            def setup(self) -> None:
                super().setup()
                with proxy._lock:
                    proxy.connections += 1
                    proxy._open.add(self.connection)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = dict(self.headers.items())
                proxy.requests.append(Request(self.command, self.path, headers, body))
                if proxy._gathering is not None:
                    proxy._gathering.wait()
                if refusal := proxy._refusal():
                    status, answer = refusal[0], [("Content-Type", "application/x-amz-json-1.0")]
                    body = json.dumps(refusal[1]).encode()
                else:
                    status, answer, body = proxy._forward(self.command, self.path, headers, body)
                self.send_response(status)
                for name, value in answer:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: moto's server logs every request already."""

        return Handler

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        upstream = HTTPConnection(*self._target, timeout=10)
        try:
            upstream.request(method, path, body=body, headers=headers)
            response = upstream.getresponse()
            answer = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            return response.status, answer, response.read()
        finally:
            upstream.close()
