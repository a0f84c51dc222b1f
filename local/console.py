"""Parley Console on the local stack: its static files and its config.

The console (`web/public/`) is static: deployed elsewhere it reads a `config.json` beside it
(docs/how-to/deploy-aws.md). Here the stack answers `/config.json` itself: the local project's URL
and publishable key, the functions' paths, Supabase Auth with email and password (and sign-up),
and the demo user's credentials, which the demo link (`/#/demo`) signs in with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

PUBLIC = Path(__file__).resolve().parents[1] / "web" / "public"
NO_STORE = {"Cache-Control": "no-store"}
FRAMING_AND_SNIFFING = {
    "Content-Security-Policy": "frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""On the console's files: no other site may frame it (its Approve button lets a destructive
tool call run), nor have a file read as another type. A deployed console's host should send the
same (docs/how-to/deploy-aws.md)."""


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """What the local console needs to know about the stack it runs on."""

    supabase_url: str
    """The local project's URL (supabase-js appends `/auth/v1` and `/realtime/v1`)."""
    publishable_key: str
    demo_email: str
    demo_password: str
    """Local only, and printed by `dev.py run`: the demo link signs in with them."""
    demo_message: str
    """Offered in a new chat: a turn with a plan, executors and a destructive call."""


def local_config(settings: ConsoleSettings) -> dict[str, Any]:
    """The console's `config.json` for this stack (the publishable key is public by design)."""
    return {
        "label": "local stack",
        "supabaseUrl": settings.supabase_url,
        "supabaseAnonKey": settings.publishable_key,
        "functions": {"chat": "/chat", "planner": "/agent_planner"},
        "auth": {
            "mode": "supabase",
            "methods": ["password", "signup"],
            "demoUser": {"email": settings.demo_email, "password": settings.demo_password},
        },
        "demoMessage": settings.demo_message,
    }


def console_routes(settings: ConsoleSettings) -> list[BaseRoute]:
    """`/config.json` and the console's files at `/` (mount last)."""

    async def config(_: Request) -> JSONResponse:
        return JSONResponse(local_config(settings), headers=NO_STORE)

    return [
        Route("/config.json", config, methods=["GET"]),
        Mount("/", app=_ConsoleFiles(directory=PUBLIC, html=True), name="console"),
    ]


class _ConsoleFiles(StaticFiles):
    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(FRAMING_AND_SNIFFING)
        return response
