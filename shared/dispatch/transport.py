"""How a function runs agents for one request: where its events go and how it reaches others.

Every invocation gets its own publisher — Supabase Realtime broadcast when `SUPABASE_URL` and
the service-role key are set, plus any sinks the services carry (tests, the local stack) and
any the caller adds (an SSE response) — and an invoker for the next hop: in this process,
over HTTP to the other functions (`INVOKER_TRANSPORT=http`), or through SQS (`sqs`: nothing
waits for another function).

`start_plan` hands a plan to the planner without waiting for it, whatever the transport: a
"run plan" message (`sqs`), or a run in the background of this process (`in_process`,
`http` — on a host that keeps running after it answers, unlike Lambda).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from shared.agents.outcomes import PlanOutcome, StepOutcome
from shared.agents.ports import Invoker
from shared.db import plans
from shared.dispatch.in_process import InProcessInvoker
from shared.events import FanoutPublisher, Publisher
from shared.events.sse import SSEPublisher
from shared.kernel.background import run_in_background
from shared.kernel.errors import ConfigurationError, NotFound

if TYPE_CHECKING:
    from shared.kernel.admission import Slot
    from shared.services import Services

T = TypeVar("T")

log = logging.getLogger(__name__)


def open_publisher(services: Services, *extra: Publisher) -> Publisher:
    """A publisher for one invocation (close it with `aclose()` when the run ends)."""
    settings = services.settings
    sinks: list[Publisher] = [*services.event_sinks, *extra]
    key = settings.supabase_service_role_key
    if settings.supabase_url and key:
        from shared.events.realtime import SupabaseRealtimePublisher  # httpx2: only when used

        sinks.append(
            SupabaseRealtimePublisher(
                supabase_url=settings.supabase_url,
                service_key=key.get_secret_value(),
                private=settings.realtime_private_channels,
                client=services.http,
            )
        )
    return FanoutPublisher(*sinks)


def invoker_for(services: Services, publisher: Publisher) -> Invoker:
    """The way to the next function, per `INVOKER_TRANSPORT`."""
    settings = services.settings
    if settings.invoker_transport == "in_process":
        return InProcessInvoker(services, publisher)
    if settings.invoker_transport == "sqs":
        from shared.dispatch.sqs_invoker import SqsInvoker  # only with sqs

        return SqsInvoker(services)
    key = settings.supabase_service_role_key
    if key is None:
        raise ConfigurationError(
            "INVOKER_TRANSPORT=http needs SUPABASE_SERVICE_ROLE_KEY: functions authenticate "
            "to each other with it"
        )
    from shared.dispatch.http_invoker import HttpInvoker  # httpx2: only when used

    return HttpInvoker(
        planner_url=settings.planner_function_url,
        executor_url=settings.executor_function_url,
        service_key=key.get_secret_value(),
        attempts=settings.invoker_attempts,
        retry_delay_seconds=settings.invoker_retry_delay_seconds,
        client=services.http,
    )


async def run_plan_here(
    services: Services,
    *,
    plan_id: UUID,
    extra: Publisher | None = None,
    replay_ended: bool = True,
) -> PlanOutcome:
    """Run (or resume) a plan in this process; its executor steps go through the invoker.

    A plan that has ended is answered as it ended, and its `done` is sent again unless
    `replay_ended` is False (a late queue message must not announce the end twice)."""
    from shared.agents.planner.runs import run_plan  # the agent core loads when a plan runs here

    await services.load_mcp_tools()
    publisher = open_publisher(services, *([extra] if extra else []))
    try:
        return await run_plan(
            services,
            plan_id=plan_id,
            publisher=publisher,
            invoker=invoker_for(services, publisher),
            replay_ended=replay_ended,
        )
    finally:
        await publisher.aclose()


async def stream_plan_here(services: Services, *, plan_id: UUID) -> AsyncIterator[str]:
    """Run (or resume) a plan in this process, in the background; its events as SSE. A plan
    that does not exist is `NotFound` at once, before any stream begins."""

    async with services.db.autocommit() as conn:
        if await plans.get_plan(conn, plan_id=plan_id) is None:
            raise NotFound(f"Plan {plan_id} not found")
    sse = SSEPublisher()
    run_in_background(run_plan_here(services, plan_id=plan_id, extra=sse), name=f"plan {plan_id}")
    return sse.stream()


async def run_step_here(services: Services, *, step_id: UUID, attempt: int) -> StepOutcome:
    """Run (or resume) one executor step in this process."""
    from shared.agents.executor.steps import run_executor_step  # the agent core

    await services.load_mcp_tools()
    publisher = open_publisher(services)
    try:
        return await run_executor_step(
            services, step_id=step_id, attempt=attempt, publisher=publisher
        )
    finally:
        await publisher.aclose()


async def start_plan(services: Services, *, plan_id: UUID, slot: Slot | None = None) -> None:
    """Hand the plan to the planner and return without waiting for it (a run in this process
    gives `slot` back when it ends; with `sqs` nothing runs here, and no caller takes one)."""
    transport = services.settings.invoker_transport
    if transport == "sqs":
        from shared.dispatch.sqs_invoker import SqsInvoker  # only with sqs

        await SqsInvoker(services).start_plan(plan_id=plan_id)
    elif transport == "http":
        remote = invoker_for(services, FanoutPublisher())
        run_in_background(_holding(slot, remote.run_plan(plan_id=plan_id)), name=f"plan {plan_id}")
    else:
        run = run_plan_here(services, plan_id=plan_id)
        run_in_background(_holding(slot, run), name=f"plan {plan_id}")


async def _holding(slot: Slot | None, run: Awaitable[T]) -> T:
    try:
        return await run
    finally:
        if slot is not None:
            slot.release()


async def resume_plan(services: Services, *, plan_id: UUID, wait: bool = True) -> PlanOutcome:
    """Take a plan up again after the user decided an approval: in this invocation until it
    ends or pauses, or — not `wait`ing, or with `sqs` — handed on to run without this caller
    (the outcome then says where it stands, `handed_off`)."""
    if wait and services.settings.invoker_transport != "sqs":
        # A plan that ended meanwhile (cancelled, its session deleted) is only reported.
        return await run_plan_here(services, plan_id=plan_id, replay_ended=False)
    from shared.agents.planner.finishing import handed_off  # the agent core

    await start_plan(services, plan_id=plan_id)
    return await handed_off(services, plan_id)
