"""The ASGI app: the websocket endpoint and the REST broadcast API, at Supabase's paths.

Clients given a project URL `http://host:port` reach `ws://host:port/realtime/v1/websocket` and
`http://host:port/realtime/v1/api/broadcast`; the server's own paths (`/socket/websocket`,
`/api/broadcast`) work too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from local.realtime import rest
from local.realtime.auth import TokenRejected
from local.realtime.config import RealtimeConfig
from local.realtime.connection import Connection
from local.realtime.engine import Realtime
from local.realtime.frames import serializer_for
from shared.services import get_settings


async def websocket_endpoint(websocket: WebSocket) -> None:
    """Upgrade (or refuse, as the hosted server does), then serve the socket."""
    engine: Realtime = websocket.app.state.realtime
    serializer = serializer_for(websocket.query_params.get("vsn"))
    if serializer is None:
        await websocket.send_denial_response(Response(status_code=403))
        return
    token = websocket.headers.get("x-api-key") or websocket.query_params.get("apikey")
    try:
        await engine.auth.claims(token)
    except TokenRejected as exc:
        await _refuse(websocket, 401, exc.connect_message)
        return
    if (refusal := engine.limits.refuses_connection()) is not None:
        await _refuse(websocket, 429, refusal)
        return
    await websocket.accept()
    assert token is not None  # claims() refuses a missing token
    await Connection(engine, websocket, serializer, token=token).run()


async def _refuse(websocket: WebSocket, status: int, message: str) -> None:
    engine: Realtime = websocket.app.state.realtime
    await asyncio.sleep(engine.config.connect_error_delay)
    await websocket.send_denial_response(JSONResponse({"error": message}, status_code=status))


def _routes() -> list[BaseRoute]:
    """Every route, under both the gateway prefix and the server's own paths."""
    result: list[BaseRoute] = []
    for socket_path, api in (
        ("/realtime/v1/websocket", "/realtime/v1/api"),
        ("/socket/websocket", "/api"),
    ):
        result += [
            WebSocketRoute(socket_path, websocket_endpoint),
            Route(f"{api}/broadcast", rest.broadcast_batch, methods=["POST"]),
            Route(f"{api}/broadcast/{{target:path}}", rest.broadcast_one, methods=["POST"]),
        ]
    return result


def create_app(
    config: RealtimeConfig | None = None,
    *,
    engine: Realtime | None = None,
    routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The app; it starts and stops its own engine unless one is passed in (already started).

    `uvicorn --factory local.realtime.app:create_app` serves it with `Settings` from the
    environment. `routes`: more of the project's API on the same server (`/auth/v1`).
    """
    owned = engine is None
    realtime = engine or Realtime(config or RealtimeConfig.from_settings(get_settings()))

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if owned:
            await realtime.start()
        try:
            yield
        finally:
            if owned:
                await realtime.stop()

    middleware = [
        Middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])
    ]
    app = Starlette(routes=[*_routes(), *routes], middleware=middleware, lifespan=lifespan)
    app.state.realtime = realtime
    return app
