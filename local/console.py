"""Parley Console on the local stack: its static files, its config, and a demo sign-in.

The console (`web/public/`) is static: deployed elsewhere it reads a `config.json` beside it
(see `web/README.md`). Here the stack answers `/config.json` itself — the local Realtime
server's URL and anon key, the functions' paths, and `auth.mode: "local"` — and mints the demo
user's token at `POST /local/demo-session`, since there is no Supabase Auth on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from shared.auth import mint_token
from shared.dashboards import OPERATOR, OPERATOR_CLAIM

PUBLIC = Path(__file__).resolve().parents[1] / "web" / "public"
DEMO_SESSION_SECONDS = 24 * 3600
NO_STORE = {"Cache-Control": "no-store"}
FRAMING_AND_SNIFFING = {
    "Content-Security-Policy": "frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""On the console's files: no other site may frame it (its Approve button lets a destructive
tool call run), nor have a file read as another type. A deployed console's host should send the
same (web/README.md)."""


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """What the local console needs to know about the stack it runs on."""

    supabase_url: str
    """The local Realtime server, as a project URL (supabase-js appends `/realtime/v1`)."""
    anon_key: str
    jwt_secret: str
    demo_user_id: UUID
    demo_email: str
    demo_message: str
    """Offered in a new chat: a turn with a plan, executors and a destructive call."""


def local_config(settings: ConsoleSettings) -> dict[str, Any]:
    """The console's `config.json` for this stack (the anon key is public by design)."""
    return {
        "label": "local stack",
        "supabaseUrl": settings.supabase_url,
        "supabaseAnonKey": settings.anon_key,
        "functions": {"chat": "/chat", "planner": "/agent_planner"},
        "auth": {"mode": "local", "demoSession": "/local/demo-session"},
        "demoMessage": settings.demo_message,
    }


def demo_token(secret: str, user_id: UUID, email: str, *, expires_in: int) -> str:
    """The demo user's access token: an operator, locally (the console's demo session and the
    token `dev.py run` prints are the same kind)."""
    return mint_token(
        secret, sub=user_id, expires_in=expires_in,
        extra={"email": email, "app_metadata": {OPERATOR_CLAIM: OPERATOR}},
    )  # fmt: skip


def demo_session(settings: ConsoleSettings) -> dict[str, Any]:
    """A session for the demo user, shaped like Supabase Auth's (an operator, locally)."""
    token = demo_token(settings.jwt_secret, settings.demo_user_id, settings.demo_email,
                       expires_in=DEMO_SESSION_SECONDS)  # fmt: skip
    return {
        "access_token": token,
        "token_type": "bearer",
        "expires_in": DEMO_SESSION_SECONDS,
        "user": {"id": str(settings.demo_user_id), "email": settings.demo_email},
    }


def console_routes(settings: ConsoleSettings) -> list[BaseRoute]:
    """`/config.json`, `POST /local/demo-session`, and the console's files at `/` (mount last)."""

    async def config(_: Request) -> JSONResponse:
        return JSONResponse(local_config(settings), headers=NO_STORE)

    async def demo(_: Request) -> JSONResponse:
        return JSONResponse(demo_session(settings), headers=NO_STORE)

    return [
        Route("/config.json", config, methods=["GET"]),
        Route("/local/demo-session", demo, methods=["POST"]),
        Mount("/", app=_ConsoleFiles(directory=PUBLIC, html=True), name="console"),
    ]


class _ConsoleFiles(StaticFiles):
    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(FRAMING_AND_SNIFFING)
        return response
