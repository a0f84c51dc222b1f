"""HTTP surface of the `agent_planner` function."""

from __future__ import annotations

from fastapi import FastAPI

from functions.agent_planner import plans
from shared.api.app import create_base_app


def create_app() -> FastAPI:
    """Build the `agent_planner` app."""
    return create_base_app(
        title="agent_planner",
        description="The planner agent: runs and resumes plans, delegates steps, approvals.",
        routers=[plans.router],
    )


app = create_app()
