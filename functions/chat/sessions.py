"""Routes over the user's sessions: CRUD, fork, messages, timeline, plans, plan transcripts."""

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import PlainTextResponse

from shared.api.deps import CurrentUser, ServicesDep
from shared.api.problems import problems
from shared.usecases import chat_sessions, plan_views, transcripts
from shared.usecases.chat_sessions import CURSOR
from shared.wire.sessions import (
    ForkRequest,
    MessageList,
    MessageOut,
    SessionCreate,
    SessionList,
    SessionOut,
    SessionUpdate,
    Timeline,
    TimelineEntryOut,
)
from shared.wire.turns import PlanList

router = APIRouter(tags=["sessions"])
AfterSeq = Annotated[int, Query(ge=0, description="Only entries with a larger `seq`.")]
Limit = Annotated[int, Query(ge=1, le=1000, description="At most this many entries.")]
PlanLimit = Annotated[int, Query(ge=1, le=200, description="At most this many plans.")]
Cursor = Annotated[
    str | None,
    Query(pattern=CURSOR, description="A page's `next_cursor`: the page after it."),
]
Include = Annotated[
    Literal["internal"] | None,
    Query(description="`internal`: the planner's tool rounds and tool results too."),
]
NOT_FOUND = problems(404)


@router.post("/sessions", status_code=status.HTTP_201_CREATED)
async def create_session(
    body: SessionCreate, user: CurrentUser, services: ServicesDep
) -> SessionOut:
    """Start an empty chat session."""
    return SessionOut.model_validate(
        await chat_sessions.create_session(services.db, user, title=body.title)
    )


@router.get("/sessions")
async def list_sessions(
    user: CurrentUser,
    services: ServicesDep,
    include_archived: bool = False,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> SessionList:
    """The user's sessions, most recently active first (archived ones on request), a page at a
    time: pass a page's `next_cursor` as `cursor` for the next."""
    page = await chat_sessions.list_sessions(
        services.db, user, include_archived=include_archived, limit=limit, cursor=cursor
    )
    return SessionList(
        sessions=[SessionOut.model_validate(s) for s in page.sessions],
        next_cursor=page.next_cursor,
    )


@router.get("/sessions/{session_id}", responses=NOT_FOUND)
async def get_session(session_id: UUID, user: CurrentUser, services: ServicesDep) -> SessionOut:
    """One session with its running token and cost totals."""
    return SessionOut.model_validate(await chat_sessions.get_session(services.db, user, session_id))


@router.patch("/sessions/{session_id}", responses=NOT_FOUND)
async def update_session(
    session_id: UUID, body: SessionUpdate, user: CurrentUser, services: ServicesDep
) -> SessionOut:
    """Rename a session, archive it, or restore it."""
    updated = await chat_sessions.update_session(
        services.db, user, session_id, title=body.title, status=body.status
    )
    return SessionOut.model_validate(updated)


@router.delete(
    "/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=NOT_FOUND
)
async def delete_session(session_id: UUID, user: CurrentUser, services: ServicesDep) -> Response:
    """Delete a session; it disappears from every listing and lookup, its plans and approvals
    too (404), and its turns stop: one waiting for an approval is cancelled at once, a running
    one before its next model or tool call. `RETENTION_DELETED_SESSIONS_DAYS` (30) days later
    the sweeper deletes it with everything of it for good."""
    await chat_sessions.delete_session(services, user, session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/sessions/{session_id}/fork",
    status_code=status.HTTP_201_CREATED,
    responses=problems(404, 409),
)
async def fork_session(
    session_id: UUID, body: ForkRequest, user: CurrentUser, services: ServicesDep
) -> SessionOut:
    """A new session with this one's conversation up to and including `at_message_id` (409 if
    that message is not one of the session's)."""
    fork = await chat_sessions.fork_session(
        services.db, user, session_id, at_message_id=body.at_message_id, title=body.title
    )
    return SessionOut.model_validate(fork)


@router.get("/sessions/{session_id}/messages", responses=NOT_FOUND)
async def list_messages(
    session_id: UUID,
    user: CurrentUser,
    services: ServicesDep,
    after_seq: AfterSeq = 0,
    limit: Limit = 200,
    include: Include = None,
) -> MessageList:
    """The conversation in order — the user's messages and the answers; `after_seq` catches a
    realtime client up after a gap. `include=internal` adds the planner's own rows: its tool
    rounds (assistant messages with `tool_calls`) and their results (`tool`) — and, in
    `removed`, those that retention deleted (`RETENTION_TOOL_ROUNDS_DAYS`)."""
    found = await chat_sessions.list_messages(
        services.db,
        user,
        session_id,
        after_seq=after_seq,
        limit=limit,
        internal=include == "internal",
    )
    last = found.messages[-1].seq if found.messages else after_seq
    return MessageList(
        messages=[MessageOut.model_validate(m) for m in found.messages],
        last_seq=last,
        removed=found.removed,
    )


@router.get("/sessions/{session_id}/timeline", responses=NOT_FOUND)
async def get_timeline(
    session_id: UUID,
    user: CurrentUser,
    services: ServicesDep,
    after_seq: AfterSeq = 0,
    limit: Limit = 500,
) -> Timeline:
    """Human and agent messages together, in the session's single `seq` order; `removed`
    names the turns whose agents' dialogue or tool rounds retention deleted.

    Every stored row, internal ones too: `kind: tool` entries are the planner's tool results —
    `create_plan`'s holds each step's result, for the model to answer from — not words for the
    user; a chat view shows `user` and `assistant` entries (`GET /sessions/{id}/messages` gives
    only those unless asked for `include=internal`)."""
    found = await chat_sessions.timeline(
        services.db, user, session_id, after_seq=after_seq, limit=limit
    )
    last = found.entries[-1].seq if found.entries else after_seq
    return Timeline(
        entries=[TimelineEntryOut.model_validate(e) for e in found.entries],
        last_seq=last,
        removed=found.removed,
    )


@router.get("/sessions/{session_id}/plans", responses=NOT_FOUND)
async def list_plans(
    session_id: UUID,
    user: CurrentUser,
    services: ServicesDep,
    after_seq: AfterSeq = 0,
    limit: PlanLimit = 50,
) -> PlanList:
    """The session's turns in full, oldest first: each plan with its steps, threads, executions
    and approvals (as `GET /plans/{id}` of the planner gives one). `after_seq` is a user
    message's `seq`: only plans answering later messages."""
    found = await plan_views.session_plans(
        services.db, user, session_id, after_seq=after_seq, limit=limit
    )
    return PlanList(plans=found.plans, last_seq=found.last_seq)


@router.get(
    "/plans/{plan_id}/transcript",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/markdown": {}}}, **problems(404)},
)
async def plan_transcript(
    plan_id: UUID, user: CurrentUser, services: ServicesDep
) -> PlainTextResponse:
    """The plan as Markdown: request, steps, every agent-to-agent message, the answer."""
    text = await transcripts.plan_transcript(services.db, user, plan_id)
    return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")
