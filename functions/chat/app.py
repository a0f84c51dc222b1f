"""HTTP surface of the `chat` function."""

from __future__ import annotations

from fastapi import FastAPI

from functions.chat import dashboards, sessions, turns
from shared.http import create_base_app


def create_app() -> FastAPI:
    """Build the `chat` app."""
    return create_base_app(
        title="chat",
        description="User-facing chat: sessions, messages, the timeline and turns; operators' "
        "dashboards.",
        routers=[turns.router, sessions.router, dashboards.router],
    )


app = create_app()
