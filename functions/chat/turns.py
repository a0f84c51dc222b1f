"""`POST /chat`: send a message; the answer comes back as JSON, as server-sent events, or as
202 Accepted while the turn runs on."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse, StreamingResponse

from shared import sending
from shared.http import CurrentUser, ServicesDep, problems
from shared.models.turns import ChatTurnAccepted, ChatTurnReply, ChatTurnRequest

router = APIRouter(tags=["chat"])

STREAM = {"text/event-stream": {"schema": {"type": "string", "description": "SSE of events"}}}
ACCEPTED = {
    "model": ChatTurnAccepted,
    "description": "The message is stored and the turn handed to the planner; it runs on. "
    "`Location` is the plan (GET /plans/{id} on the agent_planner function).",
}


@router.post(
    "/chat",
    response_model=ChatTurnReply,
    responses={200: {"content": STREAM}, 202: ACCEPTED, **problems(404, 409, 502, 503)},
)
async def post_chat(
    body: ChatTurnRequest,
    user: CurrentUser,
    services: ServicesDep,
    prefer: Annotated[str | None, Header(description="`respond-async` asks for 202")] = None,
) -> ChatTurnReply | StreamingResponse | JSONResponse:
    """Send the user's message to the planner.

    The message is stored first. Then, by `stream`, `wait` and `Prefer: respond-async`: JSON
    when the turn has ended; SSE of the turn's events (see docs/events.md) while it runs (`id`
    is the event's `seq`, `event` its type); or **202 Accepted** at once, with the ids and
    where to watch. Every event also goes to the session's Realtime channel
    `session:<session_id>`. With `INVOKER_TRANSPORT=sqs` (AWS) the turn is always accepted.
    """
    answer = sending.how_to_answer(services, body, prefer)
    if answer == "wait":
        return await sending.send(services, user, body)
    if answer == "accept":
        accepted = await sending.accept(services, user, body)
        headers = {"Location": accepted.watch.plan}
        if body.wait is None and sending.respond_async(prefer):
            headers["Preference-Applied"] = "respond-async"
        return JSONResponse(accepted.model_dump(mode="json"), status_code=202, headers=headers)
    started, events = await sending.send_streaming(services, user, body)
    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Parley-Session-Id": str(started.session_id),
        "X-Parley-Plan-Id": str(started.plan_id),
        "X-Parley-Message-Id": str(started.message_id),
    }
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)
