"""A user's turn: store the message first (`start_turn`), then answer it (`run_plan`).

`start_turn` makes no model call. Its policy for sends that overlap, enforced by Postgres row
locks (the session's row is locked for the whole transaction that stores a message):

* a resend with a `client_message_id` already used in the session returns the original
  message and plan (`created=False`) — also while that turn is still running, and also when
  both sends arrive at once; the same id with another message is `ClientMessageIdReused`
  (422), never silently the original turn;
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

from shared.agents.errors import ClientMessageIdReused, TurnStillRunning
from shared.agents.event_data import session_outbox
from shared.agents.outcomes import TurnStarted
from shared.agents.prompts import PLANNER
from shared.db import chats, leases, plans
from shared.db.database import Connection
from shared.db.records import ChatSession, Plan
from shared.events.emitter import Outbox, send_outbox
from shared.kernel.errors import InvalidInput, NotFound
from shared.kernel.text import WHITESPACE
from shared.observability import logs, tracing

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices

MAX_MESSAGE_CHARS = 32_000
TITLE_CHARS = 60


async def start_turn(
    services: AgentServices,
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
    text = message.strip(WHITESPACE)  # what the request's schema calls whitespace
    if not text:
        raise InvalidInput("The message is empty.")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"The message is longer than {MAX_MESSAGE_CHARS} characters.")
    check_message_tokens(services, text)
    settings = services.settings
    async with services.db.service() as conn:
        session = await _locked_session(conn, user_id, session_id, text, client_message_id)
        stored = await chats.store_turn(
            conn,
            session_id=session.id,
            user_id=user_id,
            content=text,
            client_message_id=client_message_id,
            fresh_seconds=settings.run_lease_seconds,
            planner_model=settings.llm_planner_model,
            planner_budget=services.planner_budget,
            planner_prompt=PLANNER,
            trace_id=tracing.trace_id(),
        )
        if stored.running is not None:
            raise TurnStillRunning(stored.running)
    assert stored.message is not None and stored.plan_id is not None
    if not stored.created and stored.message.content != text:
        assert client_message_id is not None  # only its id finds an earlier message
        raise ClientMessageIdReused(
            client_message_id, message_id=stored.message.id, plan_id=stored.plan_id
        )
    assert stored.planner_id is not None and stored.plan_status is not None
    logs.annotate(session_id=session.id, message_id=stored.message.id, plan_id=stored.plan_id)
    tracing.annotate(
        {
            "parley.session.id": str(session.id),
            "parley.plan.id": str(stored.plan_id),
            "parley.message.id": str(stored.message.id),
        }
    )
    return TurnStarted(
        session.id,
        stored.message.id,
        stored.plan_id,
        stored.planner_id,
        stored.created,
        stored.plan_status,
    )


def message_token_limit(services: AgentServices) -> int:
    """The most tokens a message may have: half the planner's budget. The other half holds
    its system prompt and tool schemas (about 1,100 tokens for routing, 4,300 in a write
    step, with the built-in tools; MCP tools add at most 24,000 characters) and the turn's
    own calls, while history and tool results give way; so the planner can always serve it."""
    return services.planner_budget // 2


def check_message_tokens(services: AgentServices, text: str) -> None:
    """`InvalidInput` for a message the planner could not serve (`message_token_limit`). A
    byte-level BPE never makes more tokens than the text has UTF-8 bytes, so most messages
    are let through without loading the tokenizer."""
    limit = message_token_limit(services)
    if len(text.encode("utf-8")) <= limit:
        return
    tokens = services.tokens.count(text)
    if tokens > limit:
        raise InvalidInput(
            f"The message is too long: {tokens} tokens, and at most {limit} are taken. "
            "Shorten it, or send it in parts."
        )


async def _locked_session(
    conn: Connection,
    user_id: UUID,
    session_id: UUID | None,
    text: str,
    client_message_id: str | None,
) -> ChatSession:
    """The session the message goes to, its row locked until the transaction ends."""
    # A message of characters Python's split takes for spaces (e.g. U+001F) still needs one.
    title = " ".join(text.split())[:TITLE_CHARS] or text[:TITLE_CHARS]
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


async def request_cancel(
    services: AgentServices, *, plan_id: UUID, user_id: UUID | None = None
) -> Plan:
    """Ask the agents working on the plan to stop; they do before their next model or tool
    call, and the plan ends `cancelled`. A plan nobody is running (no live lease: waiting for
    the user, not started yet, or its runner died) is closed `cancelled` at once, undecided
    approvals with it, and announced (`status_update{cancelled}`, `done`). Cancelling a
    finished plan changes nothing. With `user_id`: `NotFound` unless the plan is that user's
    and its session was not deleted."""
    async with services.db.service() as conn:
        if user_id is None:
            found = await plans.get_plan(conn, plan_id=plan_id)
        else:
            found = await plans.get_user_plan(conn, plan_id=plan_id, user_id=user_id)
        if found is None:
            raise NotFound(f"Plan {plan_id} not found")
        await _lock_session(conn, found.session_id)
        plan = await plans.get_plan(conn, plan_id=plan_id, lock=True)
        assert plan is not None  # plans are never deleted
        outbox = session_outbox(services, plan.session_id)
        stopped = await _stop(conn, plan, outbox)
        await send_outbox(conn, outbox)
    return stopped


async def stop_turns(services: AgentServices, conn: Connection, *, session_id: UUID) -> None:
    """Stop every turn of the session that has not ended, in `conn`'s transaction (the
    session's row locked by the caller), as `request_cancel` stops one."""
    outbox = session_outbox(services, session_id)
    for plan in await plans.list_open_plans(conn, session_id=session_id):
        await _stop(conn, plan, outbox)
    await send_outbox(conn, outbox)


async def _lock_session(conn: Connection, session_id: UUID) -> None:
    # The session's row before the plan's: the order every statement that writes a session's
    # rows and its plan takes the two locks in (announcing takes the session's seq).
    await conn.execute("SELECT 1 FROM chat_sessions WHERE id = %s FOR UPDATE", (session_id,))


async def _stop(conn: Connection, plan: Plan, outbox: Outbox) -> Plan:
    """Flag the (locked) plan for cancelling; close it at once if nobody runs it."""
    # the agent core: imported here, off the cold start
    from shared.agents.planner.finishing import TERMINAL, announce_ended, close_plan_rows

    if plan.status in TERMINAL:
        return plan
    flagged = await plans.request_cancel(conn, plan_id=plan.id)
    assert flagged is not None
    if await leases.lease_is_live(conn, table="agent_plans", row_id=plan.id):
        return flagged  # its run stops before its next model or tool call, and announces it
    closed, steps = await close_plan_rows(conn, plan.id, "cancelled", None)
    announce_ended(outbox, closed, steps)
    return closed
