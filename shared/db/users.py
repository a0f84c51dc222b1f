"""Repository: users (`auth.users`; on Supabase, GoTrue owns this table and creates users)."""

from __future__ import annotations

from uuid import UUID

from shared.db.database import Connection


async def ensure_user(conn: Connection, *, user_id: UUID, email: str) -> None:
    """Create the user if missing (local stack, demo, tests); a no-op when it exists."""
    await conn.execute(
        "INSERT INTO auth.users (id, email) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
        (user_id, email),
    )
