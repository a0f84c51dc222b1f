"""The answers that are not a route's plain JSON: 202 Accepted (and when `Prefer:
respond-async` asks for it), and streams of server-sent events.
"""

from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel

SERVER_SENT_EVENT: dict[str, Any] = {
    "type": "object",
    "title": "ServerSentEvent",
    "description": "One message of a `text/event-stream` response (each response is a "
    "sequence of them, as OpenAPI 3.2's `itemSchema` would say): `id` is the event's `seq` "
    "(so `Last-Event-ID` means after this seq), `event` its type, `data` the event as JSON.",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"type": "string"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"$ref": "#/components/schemas/Event"},
        },
    },
    "required": ["id", "event", "data"],
}


EVENT_STREAM: dict[str, Any] = {
    "text/event-stream": {"schema": {"$ref": "#/components/schemas/ServerSentEvent"}}
}


"""The content of a response that streams events (`components/schemas/ServerSentEvent`)."""


def accepted_response(model: type[BaseModel], description: str, *, location: str) -> dict[str, Any]:
    """OpenAPI of a route's 202 Accepted (`accepted`): its body `model`, and the headers,
    `location` saying what `Location` names."""
    return {
        "model": model,
        "description": description,
        "headers": {
            "Location": {
                "description": location,
                "required": True,
                "schema": {"type": "string", "format": "uri-reference"},
            },
            "Preference-Applied": {
                "description": "`respond-async` when `Prefer: respond-async` was honoured.",
                "schema": {"type": "string", "enum": ["respond-async"]},
            },
        },
    }


def accepted(body: BaseModel, location: str, *, preference_applied: bool) -> JSONResponse:
    """202 Accepted: `body`, where to watch (`Location`), and `Preference-Applied:
    respond-async` when the answer is 202 because `Prefer: respond-async` asked for it."""
    headers = {"Location": location}
    if preference_applied:
        headers["Preference-Applied"] = "respond-async"
    return JSONResponse(body.model_dump(mode="json"), status_code=202, headers=headers)


def respond_async(prefer: str | None) -> bool:
    """Whether a `Prefer` header (RFC 7240) asks for `respond-async`."""
    tokens = (
        part.split("=")[0].strip().lower() for part in (prefer or "").replace(";", ",").split(",")
    )
    return "respond-async" in tokens
