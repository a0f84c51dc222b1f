"""Chat sessions and messages against the real database."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from shared.db import Database, chats
from shared.db.records import ChatMessage
from tests.support.factories import make_session, make_user


async def test_messages_get_monotonic_seq_per_session(db: Database) -> None:
    user = await make_user(db)
    one, two = await make_session(db, user), await make_session(db, user)
    async with db.service() as conn:
        for session in (one, two, one):
            await chats.add_message(
                conn, session_id=session.id, user_id=user, role="user", content="x"
            )
        seqs = [m.seq for m in await chats.list_messages(conn, session_id=one.id)]
        later = await chats.list_messages(conn, session_id=one.id, after_seq=1)
    assert seqs == [1, 2]
    assert [m.seq for m in later] == [2]


async def test_seq_cannot_be_forged(db: Database) -> None:
    user = await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        cur = await conn.execute(
            "INSERT INTO chat_messages (session_id, user_id, role, content, seq) "
            "VALUES (%s, %s, 'user', 'x', 999) RETURNING seq",
            (session.id, user),
        )
        row = await cur.fetchone()
    assert row is not None and row["seq"] == 1


async def test_duplicate_client_message_id_is_refused(db: Database) -> None:
    user = await make_user(db)
    session = await make_session(db, user)
    insert = (
        "INSERT INTO chat_messages (session_id, user_id, role, content, client_message_id) "
        "VALUES (%s, %s, 'user', 'hi', 'c-1')"
    )
    async with db.service() as conn:
        await conn.execute(insert, (session.id, user))
    with pytest.raises(psycopg.errors.UniqueViolation, match="client_message_id"):
        async with db.service() as conn:
            await conn.execute(insert, (session.id, user))


async def test_concurrent_resends_store_one_message(db: Database) -> None:
    user = await make_user(db)
    session = await make_session(db, user)

    async def send() -> tuple[ChatMessage, bool]:
        async with db.service() as conn:
            return await chats.add_user_message(
                conn, session_id=session.id, user_id=user, content="hello", client_message_id="k"
            )

    results = await asyncio.gather(*(send() for _ in range(8)))
    assert sum(created for _, created in results) == 1
    assert len({message.id for message, _ in results}) == 1
    async with db.service() as conn:
        assert len(await chats.list_messages(conn, session_id=session.id)) == 1


async def test_list_sessions_hides_archived_and_deleted(db: Database) -> None:
    user = await make_user(db)
    keep, archived, deleted = [await make_session(db, user, title=t) for t in "abc"]
    async with db.service() as conn:
        await chats.update_session(conn, session_id=archived.id, status="archived")
        await chats.update_session(conn, session_id=deleted.id, status="deleted")
        active = await chats.list_sessions(conn, user_id=user)
        every = await chats.list_sessions(conn, user_id=user, include_archived=True)
    assert [s.title for s in active] == ["a"]
    assert sorted(s.title for s in every) == ["a", "b"]
    assert keep.status == "active"


async def test_a_deleted_session_cannot_be_renamed_or_restored(db: Database) -> None:
    """The guard is in the UPDATE itself, so a rename that waited behind a delete for the row's
    lock re-checks the deleted row and leaves it (Postgres re-evaluates the WHERE on the row as
    committed); a check in an earlier statement would have let it through."""
    user = await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        await chats.update_session(conn, session_id=session.id, status="deleted")
        assert await chats.update_session(conn, session_id=session.id, status="active") is None
        assert await chats.update_session(conn, session_id=session.id, title="new") is None
        found = await chats.get_session(conn, session_id=session.id)
    assert found is not None and (found.status, found.title) == ("deleted", session.title)


CALL: list[dict[str, Any]] = [
    {"id": "c1", "type": "function", "function": {"name": "list_tasks", "arguments": "{}"}}
]
METADATA_CASES: list[
    tuple[str, list[dict[str, Any]] | None, dict[str, object], dict[str, object]]
] = [
    # role, tool_calls, metadata given, stored
    ("assistant", None, {"kind": "answer"}, {}),
    ("assistant", None, {"kind": "answer", "finish_reason": "length"}, {"finish_reason": "length"}),
    ("assistant", None, {"kind": "configuration"}, {"kind": "configuration"}),
    ("assistant", CALL, {"kind": "tool_round"}, {}),
    ("assistant", CALL, {"kind": "tool_round", "plan_steps": "c1"}, {"plan_steps": "c1"}),
    ("tool", None, {"kind": "tool_result", "error": None}, {}),
    ("tool", None, {"kind": "tool_result", "error": "not_found"}, {"error": "not_found"}),
    ("tool", None, {"kind": "plan_results", "error": None}, {"kind": "plan_results"}),
    ("user", None, {}, {}),
]


@pytest.mark.parametrize(("role", "calls", "given", "stored"), METADATA_CASES)
async def test_a_rows_metadata_is_stored_without_what_its_role_says_and_read_back_whole(
    db: Database,
    role: str,
    calls: list[dict[str, Any]] | None,
    given: dict[str, object],
    stored: dict[str, object],
) -> None:
    user = await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        written = await chats.add_message(
            conn,
            session_id=session.id,
            user_id=user,
            role=role,  # type: ignore[arg-type]
            content="x",
            tool_calls=calls,
            tool_call_id="c1" if role == "tool" else None,
            metadata=given,
        )
        read = await chats.get_message(conn, message_id=written.id)
        cur = await conn.execute("SELECT metadata FROM chat_messages WHERE id = %s", (written.id,))
        raw = await cur.fetchone()
    assert raw is not None and raw["metadata"] == stored
    assert read is not None and read.metadata == written.metadata == given
