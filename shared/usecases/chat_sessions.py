"""Use cases over a user's chat sessions: CRUD, fork, messages, timeline, plan transcript.

Reads run as the user (`db.as_user`), so RLS decides what exists: another user's session is
simply not found. Writes the user may not make directly run as the service: copying messages
for a fork, after ownership was established under RLS; deleting a session, which stops its
turns, in one statement that checks the owner.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple
from uuid import UUID

from shared.auth.access_tokens import User
from shared.db import Database, chats
from shared.db._rows import fetch_all
from shared.db.records import ChatMessage, ChatSession, SessionStatus
from shared.db.timeline import TIMELINE_PAGE
from shared.kernel.errors import Conflict, NotFound
from shared.usecases.retention import removed_details
from shared.wire.sessions import RemovedDetail

if TYPE_CHECKING:
    from shared.services import Services

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class MessageNotInSession(Conflict):
    """A fork asked for at a message of another session (HTTP 409)."""

    title = "Message not in session"
    kind = "message-not-in-session"


class TimelineEntry(NamedTuple):
    """One human or agent message of a session (a `session_timeline` row)."""

    session_id: UUID
    seq: int
    source: str
    message_id: UUID
    kind: str
    sender_role: str
    agent_id: UUID | None
    thread_id: UUID | None
    """The agent thread (`agent_chat_sessions` row) of an agent message."""
    plan_id: UUID | None
    content: str
    tool_name: str | None
    model: str | None
    prompt_tokens: int | None
    """A chat message's model call's tokens; None for an agent message (its call is accounted
    on its run's execution)."""
    completion_tokens: int | None
    cost_usd: Decimal | None
    user_id: UUID
    created_at: datetime


async def create_session(db: Database, user: User, *, title: str | None = None) -> ChatSession:
    """A new, empty session owned by the user."""
    async with db.as_user(user.id, claims=user.claims) as conn:
        return await chats.create_session(conn, user_id=user.id, title=title or "New chat")


class SessionPage(NamedTuple):
    """A page of the user's sessions, and the cursor of the next one (None: the last)."""

    sessions: list[ChatSession]
    next_cursor: str | None


async def list_sessions(
    db: Database,
    user: User,
    *,
    include_archived: bool = False,
    limit: int = 50,
    cursor: str | None = None,
) -> SessionPage:
    """The user's sessions, most recently active first, a page of `limit` after `cursor` (a
    page's `next_cursor`). A session active while the pages are read moves to the front: it
    may be seen twice, or not at all on the later pages."""
    before = _read_cursor(cursor) if cursor is not None else None
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        found = await chats.list_sessions(
            conn,
            user_id=user.id,
            include_archived=include_archived,
            limit=limit + 1,
            before=before,
        )
    page = found[:limit]
    more = len(found) > limit
    return SessionPage(page, _cursor(page[-1]) if more else None)


CURSOR = r"^[0-9]{1,16}_[0-9a-f]{32}$"
"""A page's cursor: the last session's `updated_at` (microseconds since the epoch) and `id`
(hex). Any string of this form is a place in the list, so none is refused."""


def _cursor(last: ChatSession) -> str:
    """Where the next page starts (after `last`)."""
    at = last.updated_at - EPOCH
    micros = (at.days * 86_400 + at.seconds) * 1_000_000 + at.microseconds
    return f"{micros}_{last.id.hex}"


def _read_cursor(cursor: str) -> tuple[datetime, UUID]:
    micros, last = cursor.split("_")
    return EPOCH + timedelta(microseconds=int(micros)), UUID(hex=last)


async def get_session(db: Database, user: User, session_id: UUID) -> ChatSession:
    """The user's session; `NotFound` if it is missing, deleted or someone else's."""
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        session = await chats.get_session(conn, session_id=session_id)
    if session is None or session.status == "deleted":
        raise NotFound(f"Chat session {session_id} not found")
    return session


async def update_session(
    db: Database,
    user: User,
    session_id: UUID,
    *,
    title: str | None = None,
    status: SessionStatus | None = None,
) -> ChatSession:
    """Rename, archive or unarchive a session; `NotFound` if it is missing, deleted (also by
    a request that got there first) or someone else's (RLS hides it)."""
    async with db.as_user(user.id, claims=user.claims) as conn:
        updated = await chats.update_session(
            conn, session_id=session_id, title=title, status=status
        )
    if updated is None:
        raise NotFound(f"Chat session {session_id} not found")
    return updated


async def delete_session(services: Services, user: User, session_id: UUID) -> None:
    """Delete a session: it disappears from every listing and lookup (its plans and approvals
    too), and its turns stop — one waiting for the user (or not started) is closed
    `cancelled` at once with its approvals, a running one before its next model or tool call.
    One service transaction, the session's row checked to be the user's and locked first."""
    from shared.agents.planner.user_turns import stop_turns  # the agent core, only to stop turns

    async with services.db.service() as conn:
        if not await chats.delete_session(conn, session_id=session_id, user_id=user.id):
            raise NotFound(f"Chat session {session_id} not found")
        await stop_turns(services, conn, session_id=session_id)


async def fork_session(
    db: Database, user: User, session_id: UUID, *, at_message_id: UUID, title: str | None = None
) -> ChatSession:
    """A new session holding the conversation up to and including `at_message_id`.

    Only the user's and the assistant's words are copied; tool traffic and plans stay with the
    original, so the fork starts with a clean, valid history.
    """
    source = await get_session(db, user, session_id)
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        message = await chats.get_message(conn, message_id=at_message_id)
    if message is None or message.session_id != session_id:
        raise MessageNotInSession(f"Message {at_message_id} is not part of session {session_id}")
    async with db.service() as conn:
        fork = await chats.create_session(
            conn,
            user_id=user.id,
            title=title or f"Fork of {source.title}"[:200],
            forked_from_session_id=session_id,
            forked_at_message_id=at_message_id,
        )
        await conn.execute(
            """INSERT INTO chat_messages (session_id, user_id, role, content, model, metadata)
               SELECT %s, user_id, role, content, model,
                      jsonb_build_object('forked_from_message_id', id)
                 FROM chat_messages
                WHERE session_id = %s AND seq <= %s AND role IN ('user', 'assistant')
                  AND (role = 'user' OR tool_calls IS NULL)
                ORDER BY seq""",
            (fork.id, session_id, message.seq),
        )
        copied = await chats.get_session(conn, session_id=fork.id)
    assert copied is not None
    return copied


class Messages(NamedTuple):
    """A page of a session's messages, and what retention deleted of their turns' rows."""

    messages: list[ChatMessage]
    removed: list[RemovedDetail]
    """With `internal`: the planner's tool rounds deleted (none is among `messages`)."""


async def list_messages(
    db: Database,
    user: User,
    session_id: UUID,
    *,
    after_seq: int = 0,
    limit: int = 200,
    internal: bool = False,
) -> Messages:
    """The session's messages after `after_seq`, in order (catch-up for realtime clients);
    the planner's tool rounds and results only if `internal`, with what retention deleted of
    them."""
    await get_session(db, user, session_id)
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        found = await chats.list_messages(
            conn, session_id=session_id, after_seq=after_seq, limit=limit, internal=internal
        )
        removed = []
        if internal:
            removed = await removed_details(conn, (m.plan_id for m in found), ("tool_rounds",))
    return Messages(found, removed)


class TimelinePage(NamedTuple):
    """A page of a session's timeline, and what retention deleted of its turns."""

    entries: list[TimelineEntry]
    removed: list[RemovedDetail]
    """The agents' dialogue and the planner's tool rounds deleted (none is among `entries`)."""


async def timeline(
    db: Database, user: User, session_id: UUID, *, after_seq: int = 0, limit: int = 500
) -> TimelinePage:
    """Human and agent messages of the session in one `seq` order, and what retention deleted
    of the turns they belong to."""
    await get_session(db, user, session_id)
    async with db.as_user(user.id, read_only=True, claims=user.claims) as conn:
        entries = await fetch_all(
            conn,
            TimelineEntry,
            TIMELINE_PAGE,
            {"session": session_id, "after": after_seq, "limit": limit},
        )
        removed = await removed_details(
            conn, (e.plan_id for e in entries), ("dialogue", "tool_rounds")
        )
    return TimelinePage(entries, removed)
