"""`POST /chat`: send a message; the answer comes back as JSON, as server-sent events, or as
202 Accepted while the turn runs on."""

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse

from shared.api.deps import CurrentUser, ServicesDep, function_url
from shared.api.problems import PROBLEM_JSON, problem_response, problems
from shared.api.responses import EVENT_STREAM, accepted, accepted_response, respond_async
from shared.usecases import sending
from shared.wire.turns import ChatTurnAccepted, ChatTurnReply, ChatTurnRequest

router = APIRouter(tags=["chat"])


def _uuid_header(description: str) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "string", "format": "uuid"}}


ANSWERED = {
    "description": "JSON: the turn has ended or paused (`stream: false`). Server-sent events: "
    "the turn's events while it runs (`stream: true`), ending with `done`.",
    "content": EVENT_STREAM,
    "headers": {
        "X-Parley-Session-Id": _uuid_header("The session (server-sent events only)."),
        "X-Parley-Plan-Id": _uuid_header("The turn's plan (server-sent events only)."),
        "X-Parley-Message-Id": _uuid_header("The stored message (server-sent events only)."),
    },
}
ACCEPTED = accepted_response(
    ChatTurnAccepted,
    "The message is stored and the turn handed to the planner; it runs on. Also the answer "
    "to a resend of a turn still running elsewhere, whatever was asked.",
    location="The plan: `GET /plans/{id}` on the agent_planner function (`watch.plan`).",
)
REFUSALS: dict[int | str, dict[str, Any]] = {
    409: {
        "description": "`turn-running`: a turn of the session is still running or waits for "
        "the user (`TurnStillRunningProblem`).",
        "content": {
            PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/TurnStillRunningProblem"}}
        },
    },
    **problem_response(
        422,
        "`client-message-id-reused`: the `client_message_id` was sent before with another "
        "message (`ClientMessageIdReusedProblem`); or the request is invalid.",
        "ClientMessageIdReusedProblem",
    ),
    **problem_response(
        503,
        "`overloaded` (`OverloadedProblem`: retry after `retry_after` seconds), or the "
        "function or its model is not configured or rate limited.",
        "OverloadedProblem",
    ),
}


@router.post(
    "/chat",
    response_model=ChatTurnReply,
    responses={200: ANSWERED, 202: ACCEPTED, **problems(404, 502), **REFUSALS},
)
async def post_chat(
    body: ChatTurnRequest,
    request: Request,
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

    A resend (the same `client_message_id` and message) never runs or announces again what
    happened: a turn that ended or waits for the user is answered as it stands (JSON, or 202
    when asked for); one still running elsewhere is answered 202 with where to watch it, also
    when `stream` was asked. The same id with another message is a 422
    (`client-message-id-reused`); a new message while a turn runs, a 409 (`turn-running`).
    """
    answer = sending.how_to_answer(services, body, respond_async(prefer))
    here = function_url(request)
    if answer == "wait":
        return await sending.send(services, user, body)
    if answer == "accept":
        turn = await sending.accept(services, user, body, chat_url=here)
        asked = body.wait is None and respond_async(prefer)
        return accepted(turn, turn.watch.plan, preference_applied=asked)
    streamed = await sending.send_streaming(services, user, body, chat_url=here)
    if isinstance(streamed, ChatTurnReply):
        return streamed
    if isinstance(streamed, ChatTurnAccepted):
        return accepted(streamed, streamed.watch.plan, preference_applied=False)
    started = streamed.started
    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Parley-Session-Id": str(started.session_id),
        "X-Parley-Plan-Id": str(started.plan_id),
        "X-Parley-Message-Id": str(started.message_id),
    }
    return StreamingResponse(streamed.events, media_type="text/event-stream", headers=headers)
