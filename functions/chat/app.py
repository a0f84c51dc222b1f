"""HTTP surface of the `chat` function."""

from __future__ import annotations

from fastapi import FastAPI

from functions.chat import dashboards, event_schema, sessions, turns
from shared.api.app import TurnAdmission, create_base_app
from shared.kernel.admission import TurnSlots
from shared.services import services_of


def create_app() -> FastAPI:
    """Build the `chat` app (sends past the process's turn slots are refused up front)."""
    app = create_base_app(
        title="chat",
        description="User-facing chat: sessions, messages, the timeline and turns; operators' "
        "dashboards.",
        routers=[turns.router, sessions.router, dashboards.router, event_schema.router],
    )

    def slots() -> TurnSlots:
        return services_of(app).turn_slots

    app.add_middleware(TurnAdmission, slots=slots)
    return app


app = create_app()
