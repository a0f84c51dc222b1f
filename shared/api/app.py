"""The FastAPI app the three functions share: Parley's error handling, a health route, the
routers, and an OpenAPI document that names every problem and event schema it refers to.
"""

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI

from shared.api.problems import error_problem, handle_problems, problem_schemas, problems
from shared.api.responses import SERVER_SENT_EVENT
from shared.kernel.admission import TurnSlots
from shared.observability.tracing.http_server import TraceRequests


def create_base_app(*, title: str, description: str, routers: Sequence[APIRouter] = ()) -> FastAPI:
    """A FastAPI app with Parley's error handling, a health route and the given routers."""
    app = FastAPI(title=title, description=description, version="0.1.0")
    app.add_middleware(TraceRequests)  # a span per request when tracing is on; else a pass
    handle_problems(app)

    @app.get("/health", tags=["meta"], summary="Liveness probe")
    async def health() -> dict[str, str]:
        return {"status": "ok", "function": title}

    for router in routers:
        app.include_router(router, responses=problems(401, 422, 502, 503))
    _document_problems(app)
    return app


def _document_problems(app: FastAPI) -> None:
    """Complete the OpenAPI document with the schemas routes refer to by name: `Problem`
    (`problems()`), its kinds (`ProblemType`) and those with members of their own, and the
    events (`Event`, `ServerSentEvent`: `EVENT_STREAM`)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()  # FastAPI's, which it keeps in `app.openapi_schema`
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(problem_schemas())
        from shared.wire.event_schema import openapi_components  # the event models: only here

        for name, schema in openapi_components().items():
            schemas.setdefault(name, schema)
        schemas["ServerSentEvent"] = SERVER_SENT_EVENT
        _document_unreadable_bodies(document)
        return document

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way


def _document_unreadable_bodies(document: dict[str, Any]) -> None:
    """A route that takes a body answers 400 to one that is not JSON at all (FastAPI's own
    answer, before validation)."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                operation["responses"].setdefault("400", problems(400)[400])


class TurnAdmission:
    """ASGI middleware refusing a send (`POST /chat`) at once while every turn slot is taken:
    a `503` with `Retry-After` before its body is read or its token checked, so refusing the
    overflow costs next to nothing. The send that does get through still takes its slot
    (`TurnSlots.take`), which decides; this only spares the full request's work."""

    def __init__(self, app: Any, *, slots: Callable[[], TurnSlots], path: str = "/chat") -> None:
        self.app = app
        self._slots = slots
        self._path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == self._path:
            slots = self._slots()
            if slots.full:
                await error_problem(slots.overloaded())(scope, receive, send)
                return
        await self.app(scope, receive, send)
