"""HTTP surface of the `agent_executor` function."""

from __future__ import annotations

from fastapi import FastAPI

from functions.agent_executor import steps
from shared.api.app import create_base_app


def create_app() -> FastAPI:
    """Build the `agent_executor` app."""
    return create_base_app(
        title="agent_executor",
        description="Read-only executor agents: one plan step per invocation.",
        routers=[steps.router],
    )


app = create_app()
