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


async def user_exists(conn: Connection, *, user_id: UUID) -> bool:
    """Whether `auth.users` still has the user (a token outlives the user it was issued to)."""
    cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM auth.users WHERE id = %s)", (user_id,))
    row = await cur.fetchone()
    return bool(row and next(iter(row.values())))
