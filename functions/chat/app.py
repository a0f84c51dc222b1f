"""HTTP surface of the `chat` function."""

from __future__ import annotations

from fastapi import FastAPI

from functions.chat import sessions, turns
from shared.http import create_base_app


def create_app() -> FastAPI:
    """Build the `chat` app."""
    return create_base_app(
        title="chat",
        description="User-facing chat: sessions, messages, the timeline and turns.",
        routers=[turns.router, sessions.router],
    )


app = create_app()
