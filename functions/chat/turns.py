"""`POST /chat`: send a message; the answer comes back as JSON or as server-sent events."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from shared import sending
from shared.http import CurrentUser, ServicesDep, problems
from shared.models.turns import ChatTurnReply, ChatTurnRequest

router = APIRouter(tags=["chat"])

STREAM = {"text/event-stream": {"schema": {"type": "string", "description": "SSE of events"}}}


@router.post(
    "/chat",
    response_model=ChatTurnReply,
    responses={200: {"content": STREAM}, **problems(404, 409, 502, 503)},
)
async def post_chat(
    body: ChatTurnRequest, user: CurrentUser, services: ServicesDep
) -> ChatTurnReply | StreamingResponse:
    """Send the user's message to the planner and answer when the turn ends.

    The message is stored first. With `stream: true` the turn's events (see docs/events.md)
    arrive as SSE while it runs: `id` is the event's `seq`, `event` its type. Either way every
    event also goes to the session's Realtime channel `session:<session_id>`.
    """
    if not body.stream:
        return await sending.send(services, user, body)
    started, events = await sending.send_streaming(services, user, body)
    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Parley-Session-Id": str(started.session_id),
        "X-Parley-Plan-Id": str(started.plan_id),
        "X-Parley-Message-Id": str(started.message_id),
    }
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)
