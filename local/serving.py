"""Serve an ASGI app on a localhost port from a background thread (tests, the local stack).

Startup is awaited on uvicorn's own signal, never on a sleep, and the listening socket is bound
before the thread starts, so `port` is known at once (port 0 picks a free one).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

import uvicorn

STARTUP_TIMEOUT = 10.0


class _Server(uvicorn.Server):
    """A uvicorn server that reports startup through a thread-safe event."""

    def __init__(
        self, config: uvicorn.Config, on_shutdown: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._on_shutdown = on_shutdown

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        if self._on_shutdown is not None:
            # Runs on the server's own loop: where its pools and clients were opened.
            await self._on_shutdown()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket with Nagle off (else each response waits ~40 ms for an ACK)."""
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say TCP.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class BackgroundServer:
    """`with BackgroundServer(app) as server: httpx.get(server.url + "/health")`."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "asgi-server",
        websockets: bool = False,
        on_shutdown: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.app, self.host, self.name = app, host, name
        self._port, self._websockets, self._on_shutdown = port, websockets, on_shutdown
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError(f"{self.name} is not running; call start() first")
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        """Bind, start uvicorn in a daemon thread, return once it accepts connections."""
        if self._thread is not None:
            return self
        sock = listen(self.host, self._port)
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http="h11",
            ws="websockets-sansio" if self._websockets else "none",
            timeout_graceful_shutdown=2,
        )
        server = _Server(config, self._on_shutdown)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=self.name, daemon=True
        )
        self._socket, self._server, self._thread = sock, server, thread
        thread.start()
        if not server.ready.wait(STARTUP_TIMEOUT) or not server.started:
            self.stop()
            raise RuntimeError(f"{self.name} did not start (see the log above)")
        return self

    def stop(self) -> None:
        """Shut uvicorn down and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STARTUP_TIMEOUT)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
