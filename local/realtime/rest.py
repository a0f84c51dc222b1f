"""REST broadcast: `POST /api/broadcast` (batch) and `/api/broadcast/{topic}/events/{event}`.

Behaviour of `broadcast_controller.ex` / `broadcast_single_controller.ex`: a JWT as
`Authorization: Bearer` or `apikey` (401 `{"message": "Unauthorized"}`), 202 with an empty body,
422 with changeset-style `{"errors": …}`. `topic` is the subtopic as given (`session:<id>`, no
`realtime:` prefix is added or removed). Private messages need a broadcast-write policy on
`realtime.messages`; in a batch, unauthorised ones are skipped silently (still 202). Every
message counts against the events-per-second limit; past it, 429 `{"message": …}` in the hosted
words. Policies see all the request's headers as `request.headers`.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from local.realtime.auth import Claims, TokenRejected
from local.realtime.engine import Realtime
from local.realtime.frames import JsonObject, UserBroadcast, dumps
from local.realtime.hub import tenant_topic
from local.realtime.policies import PolicyError, write_access

_BLANK = "can't be blank"
_INVALID = "is invalid"
_JSON_TYPES = ("application/json", "application/octet-stream")


def _engine(request: Request) -> Realtime:
    engine: Realtime = request.app.state.realtime
    return engine


async def _caller(request: Request) -> Claims | None:
    authorization = request.headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if not (scheme.lower() == "bearer" and token):
        token = request.headers.get("apikey", "")
    try:
        return await _engine(request).auth.claims(token)
    except TokenRejected:
        return None


def _unauthorized() -> JSONResponse:
    return JSONResponse({"message": "Unauthorized"}, status_code=401)


async def broadcast_batch(request: Request) -> Response:
    """`{"messages": [{topic, event, payload, private?, id?}]}` → 202."""
    claims = await _caller(request)
    if claims is None:
        return _unauthorized()
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"message": "Invalid JSON body"}, status_code=400)
    engine = _engine(request)
    messages, errors = _validate_batch(body, engine.config.max_payload_bytes)
    if errors is not None:
        return JSONResponse({"errors": errors}, status_code=422)
    events = engine.limits.events
    if events.avg > events.limit:
        return _too_many("You have exceeded your rate limit")
    if len(messages) + events.avg > events.limit:
        return _too_many("Too many messages to broadcast, please reduce the batch size")
    await _send_batch(engine, claims, messages, dict(request.headers))
    return Response(status_code=202)


def _too_many(message: str) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=429)


def _validate_batch(body: Any, max_bytes: int) -> tuple[list[JsonObject], JsonObject | None]:
    raw = body.get("messages") if isinstance(body, dict) else None
    if raw is None or raw == []:
        return [], {"messages": [_BLANK]}
    if not isinstance(raw, list):
        return [], {"messages": [_INVALID]}
    checked = [_validate_message(m, max_bytes) for m in raw]
    if any(problems for _, problems in checked):
        return [], {"messages": [problems for _, problems in checked]}
    return [message for message, _ in checked], None


def _validate_message(message: Any, max_bytes: int) -> tuple[JsonObject, dict[str, list[str]]]:
    if not isinstance(message, dict):
        return {}, {"messages": [_INVALID]}
    problems: dict[str, list[str]] = {}
    for field in ("topic", "event"):
        value = message.get(field)
        if value in (None, ""):
            problems[field] = [_BLANK]
        elif not isinstance(value, str):
            problems[field] = [_INVALID]
    payload = message.get("payload")
    if payload is None:
        problems["payload"] = [_BLANK]
    elif not isinstance(payload, dict):
        problems["payload"] = [_INVALID]
    elif len(dumps(payload).encode()) > max_bytes:
        problems["payload"] = ["Payload size exceeds tenant limit"]
    private = _flag(message.get("private", False))
    if private is None:
        problems["private"] = [_INVALID]
    if "id" in message and not _is_uuid(message["id"]):
        problems["id"] = [_INVALID]
    return {**message, "private": bool(private)}, problems


async def _send_batch(
    engine: Realtime, claims: Claims, messages: list[JsonObject], headers: dict[str, str]
) -> None:
    private_topics: dict[str, list[JsonObject]] = defaultdict(list)
    for message in messages:
        if message["private"]:
            private_topics[message["topic"]].append(message)
        else:
            _publish_json(engine, message, private=False)
    for topic, group in private_topics.items():
        if await _may_write(engine, topic, claims, headers):
            for message in group:
                _publish_json(engine, message, private=True)


def _publish_json(engine: Realtime, message: JsonObject, *, private: bool) -> None:
    payload: JsonObject = {
        "payload": message["payload"],
        "event": message["event"],
        "type": "broadcast",
    }
    if message.get("id"):
        payload["meta"] = {"id": message["id"]}
    engine.limits.events.add()
    engine.hub.publish(tenant_topic(message["topic"], private=private), "broadcast", payload)


async def broadcast_one(request: Request) -> Response:
    """`POST …/broadcast/{topic}/events/{event}[?private=true]`, raw JSON or bytes body → 202."""
    content_type = request.headers.get("content-type")
    media = (content_type or "application/json").split(";")[0].strip().lower()
    if media not in _JSON_TYPES:
        return JSONResponse(
            {"error": "Unsupported Media Type. Use application/json or application/octet-stream"},
            status_code=415,
        )
    target = _topic_and_event(request)
    if target is None:
        return JSONResponse({"message": "not found"}, status_code=404)
    claims = await _caller(request)
    if claims is None:
        return _unauthorized()
    engine, (topic, event) = _engine(request), target
    broadcast = await _single_payload(request, event, binary=media == _JSON_TYPES[1])
    if isinstance(broadcast, Response):
        return broadcast
    if engine.limits.events.avg >= engine.limits.events.limit:
        return _too_many("You have exceeded your rate limit")
    private = request.query_params.get("private", "").lower() == "true"
    if private and not await _may_write(engine, topic, claims, dict(request.headers)):
        return JSONResponse({"message": "Unauthorized"}, status_code=403)
    engine.limits.events.add()
    engine.hub.publish(tenant_topic(topic, private=private), "broadcast", broadcast)
    return Response(status_code=202)


async def _single_payload(
    request: Request, event: str, *, binary: bool
) -> UserBroadcast | Response:
    body = await request.body()
    limit = _engine(request).config.max_payload_bytes
    if binary:
        data, is_json = body, False
    else:
        try:
            value = json.loads(body) if body.strip() else {}
        except ValueError:
            return JSONResponse({"message": "Invalid JSON body"}, status_code=400)
        # Phoenix's JSON parser keeps non-object bodies under "_json".
        data, is_json = dumps(value if isinstance(value, dict) else {"_json": value}).encode(), True
    if len(data) > limit:
        return JSONResponse(
            {"errors": {"payload": ["Payload size exceeds tenant limit"]}}, status_code=422
        )
    return UserBroadcast(event, data, is_json)


def _topic_and_event(request: Request) -> tuple[str, str] | None:
    # Read the raw path: an encoded "/" inside the topic must not split it.
    raw = request.scope.get("raw_path", b"").decode("latin-1").split("?")[0]
    parts = raw.rstrip("/").split("/")
    if len(parts) < 4 or parts[-2] != "events" or parts[-4] != "broadcast":
        return None
    topic, event = unquote(parts[-3]), unquote(parts[-1])
    return (topic, event) if topic and event else None


async def _may_write(engine: Realtime, topic: str, claims: Claims, headers: dict[str, str]) -> bool:
    try:
        return await write_access(engine.pool, topic, claims, "broadcast", headers=headers)
    except PolicyError:
        return False


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return isinstance(value, str)
