"""Sending a message: store it, hand the turn to the planner, answer with JSON or SSE.

The message is stored before anything else (`start_turn`), so validation errors, a missing
session or a refused double-submit come back as plain HTTP errors before any streaming starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from shared.agents import PlanOutcome, TurnStarted, start_turn
from shared.agents.http_invoker import HttpInvoker
from shared.auth import User
from shared.background import run_in_background
from shared.events import FanoutPublisher
from shared.events.sse import SSEPublisher
from shared.models.turns import ChatTurnReply, ChatTurnRequest
from shared.runs import invoker_for, open_publisher

if TYPE_CHECKING:
    from shared.services import Services


async def send(services: Services, user: User, request: ChatTurnRequest) -> ChatTurnReply:
    """Store the message, run (or resume) its turn, and return where it ended."""
    started = await _start(services, user, request)
    publisher = open_publisher(services)
    try:
        outcome = await invoker_for(services, publisher).run_plan(plan_id=started.plan_id)
    finally:
        await publisher.aclose()
    return reply(started, outcome)


async def send_streaming(
    services: Services, user: User, request: ChatTurnRequest
) -> tuple[TurnStarted, AsyncIterator[str]]:
    """Store the message, then stream the turn's events as SSE while it runs.

    The turn runs to its end even if the client goes away: the tables and Realtime have it all.
    """
    started = await _start(services, user, request)
    if services.settings.invoker_transport == "http":
        # The planner runs in its own function and publishes there: relay its SSE.
        remote = invoker_for(services, FanoutPublisher())
        assert isinstance(remote, HttpInvoker)
        return started, remote.stream_plan(plan_id=started.plan_id)
    sse = SSEPublisher()
    publisher = open_publisher(services, sse)
    invoker = invoker_for(services, publisher)

    async def run() -> None:
        try:
            await invoker.run_plan(plan_id=started.plan_id)
        finally:
            await publisher.aclose()

    run_in_background(run(), name=f"turn {started.plan_id}")
    return started, sse.stream()


async def _start(services: Services, user: User, request: ChatTurnRequest) -> TurnStarted:
    await services.load_mcp_tools()  # the planner may run in this process
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
