"""Run the fake model on a free localhost port in a background thread (tests, local stack)."""

from __future__ import annotations

import socket
import threading
from types import TracebackType

import uvicorn

from shared.llm.fake_server.app import FakeModel

STARTUP_TIMEOUT = 10.0


class _Server(uvicorn.Server):
    """A uvicorn server that reports startup through a thread-safe event."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()


def _listen(host: str, port: int) -> socket.socket:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say TCP, and
    # without it every response waits ~40 ms on Nagle + delayed ACK.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class FakeModelServer(FakeModel):
    """The fake model served over real HTTP: `with FakeModelServer() as fake: fake.base_url`.

    `base_url` ends in `/v1`, as OpenAI's does; `/chat/completions` without it works too.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__()
        self._host, self._port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("the fake model server is not running; call start() first")
        return int(self._socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    def start(self) -> FakeModelServer:
        """Bind the port, start uvicorn in a daemon thread, return once it accepts requests."""
        if self._thread is not None:
            return self
        sock = _listen(self._host, self._port)
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", loop="asyncio",
            http="h11", ws="none", timeout_graceful_shutdown=2,
        )  # fmt: skip
        server = _Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="fake-model-server", daemon=True
        )
        self._socket, self._server, self._thread = sock, server, thread
        thread.start()
        if not server.ready.wait(STARTUP_TIMEOUT) or not server.started:
            self.stop()
            raise RuntimeError("the fake model server did not start (see the log above)")
        return self

    def stop(self) -> None:
        """Release stalled requests, shut uvicorn down, and wait for its thread."""
        self.release()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STARTUP_TIMEOUT)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
