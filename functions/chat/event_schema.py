"""`GET /schemas/events.json`: the JSON Schema of every event type, for typed clients."""

from functools import cache
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

router = APIRouter(tags=["meta"])
SCHEMA_JSON = "application/schema+json"


@cache
def _schema() -> dict[str, Any]:
    from shared.wire.event_schema import events_json_schema  # the models load on first request

    return events_json_schema()


@router.get(
    "/schemas/events.json",
    response_class=JSONResponse,
    responses={
        200: {
            "description": "A JSON Schema (draft 2020-12) document",
            "content": {SCHEMA_JSON: {"schema": {"type": "object"}}},
        }
    },
)
async def get_events_schema() -> JSONResponse:
    """The JSON Schema (2020-12) of the events Realtime and server-sent events carry: `oneOf`
    the twelve types by `type`, each with its `data` (docs/events.md explains them). The same
    schemas are in every function's OpenAPI document, as `components/schemas/Event`. No
    token needed."""
    return JSONResponse(
        _schema(), media_type=SCHEMA_JSON, headers={"Cache-Control": "public, max-age=300"}
    )
