"""Builders that keep test bodies short."""

from __future__ import annotations

from uuid import UUID, uuid4

from shared.db import Database, chats, users
from shared.db.records import ChatSession


async def make_user(db: Database, *, email: str | None = None) -> UUID:
    user_id = uuid4()
    async with db.service() as conn:
        await users.ensure_user(conn, user_id=user_id, email=email or f"{user_id}@test.local")
    return user_id


async def make_session(db: Database, user_id: UUID, *, title: str = "Test chat") -> ChatSession:
    async with db.service() as conn:
        return await chats.create_session(conn, user_id=user_id, title=title)
