"""A user's turn: store the message first (`start_turn`), then answer it (`run_plan`).

`start_turn` makes no model call. Its policy for sends that overlap, enforced by Postgres row
locks (the session's row is locked for the whole transaction that stores a message):

* a resend with a `client_message_id` already used in the session returns the original
  message and plan (`created=False`) — also while that turn is still running, and also when
  both sends arrive at once;
* a message sent without `session_id` creates one session per (user, `client_message_id`), so
  its resend lands in the same session (clients must then use ids unique per user, e.g. UUIDs);
* a new message while a turn of the session is still running → `TurnStillRunning` (409).
  Still running = not cancelled, and: its run lease is live, or it is `pending` and younger
  than `RUN_LEASE_SECONDS` (its run has not started yet), or it is `awaiting_approval`. A plan
  whose runner died (lease expired) does not block the session: it stays resumable by
  `run_plan`, and the new message is accepted beside it.

`run_turn` is both steps, in this process (tests, local stack). Storing a message loads none
of the agent core: a function that only stores turns and hands them on (the chat function on
AWS) never loads the planner, the tools or the model client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from shared import logs, tracing
from shared.agents.errors import TurnStillRunning
from shared.agents.outcomes import TurnOutcome, TurnStarted
from shared.agents.prompts import PLANNER
from shared.db import chats, leases, plans
from shared.db.database import Connection
from shared.db.records import ChatSession, Plan
from shared.errors import InvalidInput, NotFound
from shared.events import Publisher

if TYPE_CHECKING:
    from shared.services import Services

MAX_MESSAGE_CHARS = 32_000
TITLE_CHARS = 60


async def start_turn(
    services: Services,
    *,
    user_id: UUID,
    session_id: UUID | None,
    message: str,
    client_message_id: str | None = None,
) -> TurnStarted:
    """Store the user's message (in a new session when `session_id` is None), make sure the
    session has its planner, and create the message's plan — one transaction of two
    statements after `BEGIN`, no model call: the session's row locked (or made), then the
    message, planner and plan (`chats.store_turn`).

    Raises `NotFound` for a session that is not the user's, `TurnStillRunning` while another
    turn of the session runs (see the module docstring). The plan is made in the current trace
    (tracing on), and from here on this task's log records carry the turn's ids.
    """
    text = message.strip()
    if not text:
        raise InvalidInput("The message is empty.")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"The message is longer than {MAX_MESSAGE_CHARS} characters.")
    settings = services.settings
    async with services.db.service() as conn:
        session = await _locked_session(conn, user_id, session_id, text, client_message_id)
        stored = await chats.store_turn(
            conn, session_id=session.id, user_id=user_id, content=text,
            client_message_id=client_message_id, fresh_seconds=settings.run_lease_seconds,
            planner_model=settings.llm_planner_model, planner_budget=services.planner_budget,
            planner_prompt=PLANNER, trace_id=tracing.trace_id(),
        )  # fmt: skip
        if stored.running is not None:
            raise TurnStillRunning(stored.running)
    assert stored.message is not None and stored.plan_id is not None
    assert stored.planner_id is not None and stored.plan_status is not None
    logs.annotate(session_id=session.id, message_id=stored.message.id, plan_id=stored.plan_id)
    tracing.annotate({"parley.session.id": str(session.id), "parley.plan.id": str(stored.plan_id),
                      "parley.message.id": str(stored.message.id)})  # fmt: skip
    return TurnStarted(session.id, stored.message.id, stored.plan_id, stored.planner_id,
                       stored.created, stored.plan_status)  # fmt: skip


async def _locked_session(
    conn: Connection,
    user_id: UUID,
    session_id: UUID | None,
    text: str,
    client_message_id: str | None,
) -> ChatSession:
    """The session the message goes to, its row locked until the transaction ends."""
    title = " ".join(text.split())[:TITLE_CHARS]
    if session_id is None and client_message_id is None:
        return await chats.create_session(conn, user_id=user_id, title=title)
    if session_id is None:
        assert client_message_id is not None
        first = await chats.session_for_first_message(
            conn, user_id=user_id, client_message_id=client_message_id, title=title
        )
        session_id = first.id
    found = await chats.get_session(conn, session_id=session_id, user_id=user_id, lock=True)
    if found is None or found.status == "deleted":
        raise NotFound(f"Chat session {session_id} not found")
    return found


async def run_turn(
    services: Services,
    *,
    user_id: UUID,
    session_id: UUID | None,
    message: str,
    publisher: Publisher,
    client_message_id: str | None = None,
) -> TurnOutcome:
    """`start_turn`, then `run_plan` in this process (executor steps in-process too)."""
    from shared.agents.invoker import InProcessInvoker  # the core loads when a turn runs

    started = await start_turn(
        services, user_id=user_id, session_id=session_id, message=message,
        client_message_id=client_message_id,
    )  # fmt: skip
    outcome = await InProcessInvoker(services, publisher).run_plan(plan_id=started.plan_id)
    return TurnOutcome(started, outcome)


async def request_cancel(services: Services, *, plan_id: UUID, user_id: UUID | None = None) -> Plan:
    """Ask the agents working on the plan to stop; they do before their next model or tool
    call, and the plan ends `cancelled`. A plan nobody is running (no live lease: waiting for
    the user, not started yet, or its runner died) is closed `cancelled` at once, undecided
    approvals with it. Cancelling a finished plan changes nothing."""
    from shared.agents.finishing import TERMINAL, close_plan_rows  # with the agent core

    async with services.db.service() as conn:
        plan = await plans.get_plan(conn, plan_id=plan_id, user_id=user_id, lock=True)
        if plan is None:
            raise NotFound(f"Plan {plan_id} not found")
        if plan.status in TERMINAL:
            return plan
        flagged = await plans.request_cancel(conn, plan_id=plan_id)
        assert flagged is not None
        idle = not await leases.lease_is_live(conn, table="agent_plans", row_id=plan_id)
        if idle:
            closed, _ = await close_plan_rows(conn, plan_id, "cancelled", None)
            return closed
    return flagged
