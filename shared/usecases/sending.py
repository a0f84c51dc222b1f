"""Sending a message: store it, hand the turn to the planner, answer with JSON, SSE or 202.

The message is stored before anything else (`start_turn`), so validation errors, a missing
session or a refused double-submit come back as plain HTTP errors before any streaming starts.

How the caller is answered (`how_to_answer`):

* `wait` — JSON when the turn has ended (or paused for an approval);
* `stream` — server-sent events while it runs (local stack, hosts that can stream);
* `accept` — 202 Accepted once the turn is handed to the planner, with where to watch it.
  The deployed default (`INVOKER_TRANSPORT=sqs`): a Lambda function URL buffers its response,
  so waiting would only hold the frontend's request open for the whole plan; progress reaches
  it through Realtime anyway.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Literal, NamedTuple

from shared.agents.outcomes import PlanOutcome, TurnStarted
from shared.agents.planner.user_turns import start_turn
from shared.auth.access_tokens import User
from shared.db import plans
from shared.db.plans import SETTLED_STEP
from shared.dispatch.transport import invoker_for, open_publisher, start_plan
from shared.events import FanoutPublisher
from shared.events.sse import SSEPublisher
from shared.kernel.background import run_in_background
from shared.kernel.errors import InvalidInput
from shared.wire.turns import ChatTurnAccepted, ChatTurnReply, ChatTurnRequest, TurnWatch

if TYPE_CHECKING:
    from shared.kernel.admission import Slot
    from shared.services import Services

Answer = Literal["wait", "stream", "accept"]
QUEUED_ONLY = (
    "This deployment runs turns through queues, so it cannot {what}: send with `wait: false` "
    "(the default here) and follow the turn on the session's Realtime channel."
)


def how_to_answer(services: Services, request: ChatTurnRequest, prefer_async: bool) -> Answer:
    """Decide from the request, whether its `Prefer` header asks to be answered at once
    (`respond-async`) and the transport — before anything is stored, so a request that cannot
    be served stores nothing."""
    queued = services.settings.invoker_transport == "sqs"
    if request.stream:
        if request.wait is False:
            raise InvalidInput("`stream: true` answers while the turn runs; drop `wait: false`.")
        if queued:
            raise InvalidInput(QUEUED_ONLY.format(what="stream a turn"))
        return "stream"
    if request.wait is None:
        return "accept" if queued or prefer_async else "wait"
    if request.wait and queued:
        raise InvalidInput(QUEUED_ONLY.format(what="wait for a turn"))
    return "wait" if request.wait else "accept"


async def send(services: Services, user: User, request: ChatTurnRequest) -> ChatTurnReply:
    """Store the message, run (or resume) its turn, and return where it ended (`Overloaded`
    before anything is stored when this process runs as many turns as it may). A resend of a
    turn that has ended or waits for the user is only reported (`reported`)."""
    with _slot(services):
        started = await _start(services, user, request)
        if reported(started):
            return reply(started, await standing(services, started))
        publisher = open_publisher(services)
        try:
            outcome = await invoker_for(services, publisher).run_plan(plan_id=started.plan_id)
        finally:
            await publisher.aclose()
    return reply(started, outcome)


def reported(started: TurnStarted) -> bool:
    """Whether a send only reports its turn, running and announcing nothing: a resend of a turn
    that has ended (its `done` was sent) or waits for the user's decision (nothing to do
    until they decide)."""
    return not started.created and started.plan_status in SETTLED_STEP  # plans settle alike


async def standing(services: Services, started: TurnStarted) -> PlanOutcome:
    """Where the turn's plan stands (an ended one with its answer), read, not run."""
    from shared.agents.planner.finishing import (
        outcome_of,  # the agent core: a send that waits has it
    )

    async with services.db.autocommit() as conn:
        plan = await plans.get_plan(conn, plan_id=started.plan_id)
    assert plan is not None  # plans are never deleted
    return await outcome_of(services, plan)


def _slot(services: Services) -> AbstractContextManager[object]:
    """A turn slot when the turn runs in this process (`in_process`), else nothing to hold."""
    if services.settings.invoker_transport != "in_process":
        return nullcontext()
    return services.turn_slots.take()


async def accept(
    services: Services, user: User, request: ChatTurnRequest, *, chat_url: str
) -> ChatTurnAccepted:
    """Store the message, hand its turn to the planner without waiting, say where to watch.

    A resend of a turn that is still open hands it over again (harmless: the planner resumes
    it, or finds it running); one that has ended or waits for the user is only reported.
    `chat_url`: this function's URL as the caller reached it (`watch.messages` is on it)."""
    slot = services.turn_slots.take() if services.settings.invoker_transport != "sqs" else None
    try:
        started = await _start(services, user, request)
        return await _hand_over(services, started, slot, chat_url)
    except BaseException:
        if slot is not None:
            slot.release()
        raise


async def _hand_over(
    services: Services, started: TurnStarted, slot: Slot | None, chat_url: str
) -> ChatTurnAccepted:
    """Hand a stored turn to the planner (unless it is only `reported`) and say where to
    watch it; `slot` goes with the run, or back."""
    if reported(started):
        if slot is not None:
            slot.release()
    else:
        await start_plan(services, plan_id=started.plan_id, slot=slot)  # gives it back
    return ChatTurnAccepted(
        session_id=started.session_id,
        message_id=started.message_id,
        plan_id=started.plan_id,
        created=started.created,
        status=started.plan_status,
        watch=watch(services, started, chat_url),
    )


def watch(services: Services, started: TurnStarted, chat_url: str) -> TurnWatch:
    """Where to follow a turn: the channel, the plan on the planner's URL
    (`PLANNER_FUNCTION_URL`), the messages on the chat function's (`chat_url`)."""
    planner = services.settings.planner_function_url or ""
    return TurnWatch(
        realtime_channel=f"session:{started.session_id}",
        private=services.settings.realtime_private_channels,
        plan=f"{planner}/plans/{started.plan_id}",
        messages=f"{chat_url}/sessions/{started.session_id}/messages",
    )


class Streaming(NamedTuple):
    """A turn whose events stream to this response as it runs."""

    started: TurnStarted
    events: AsyncIterator[str]


async def send_streaming(
    services: Services, user: User, request: ChatTurnRequest, *, chat_url: str
) -> Streaming | ChatTurnReply | ChatTurnAccepted:
    """Store the message, then stream the turn's events as SSE while it runs.

    The turn runs to its end even if the client goes away: the tables and Realtime have it all.
    A resend streams nothing: a turn that ended or waits for the user is reported (JSON), and
    one still open — running elsewhere, whose events this response cannot carry — is handed
    over again and answered 202, with where to watch it.
    """
    slot = services.turn_slots.take() if services.settings.invoker_transport != "http" else None
    try:
        started = await _start(services, user, request)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    if not started.created:
        if reported(started):
            if slot is not None:
                slot.release()
            return reply(started, await standing(services, started))
        return await _hand_over(services, started, slot, chat_url)
    if slot is None:  # `http`: the planner runs in its own function; relay its SSE
        remote = invoker_for(services, FanoutPublisher())
        from shared.dispatch.http_invoker import HttpInvoker  # httpx2: only when used

        assert isinstance(remote, HttpInvoker)
        return Streaming(started, remote.stream_plan(plan_id=started.plan_id))
    sse = SSEPublisher()
    publisher = open_publisher(services, sse)
    invoker = invoker_for(services, publisher)

    async def run() -> None:
        with slot:
            try:
                await invoker.run_plan(plan_id=started.plan_id)
            finally:
                await publisher.aclose()

    run_in_background(run(), name=f"turn {started.plan_id}")
    return Streaming(started, sse.stream())


async def _start(services: Services, user: User, request: ChatTurnRequest) -> TurnStarted:
    # No MCP here: storing a message offers no tool. Wherever the planner runs — this process
    # (`in_process`), another function — it loads them itself (`InProcessInvoker`, `runs`), so
    # the deployed chat never imports the MCP SDK nor connects to a server.
    return await start_turn(
        services,
        user_id=user.id,
        session_id=request.session_id,
        message=request.message,
        client_message_id=request.client_message_id,
    )


def reply(started: TurnStarted, outcome: PlanOutcome) -> ChatTurnReply:
    """The JSON answer to a send."""
    return ChatTurnReply(
        session_id=started.session_id,
        message_id=started.message_id,
        plan_id=started.plan_id,
        created=started.created,
        status=outcome.status,
        strategy=outcome.strategy,
        answer=outcome.answer,
        answer_message_id=outcome.message_id,
        error=outcome.error,
        running_elsewhere=outcome.running_elsewhere,
    )
