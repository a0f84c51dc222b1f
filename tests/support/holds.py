"""Holding a model call in flight, and reading what the durable parts stored."""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from uuid import UUID, uuid4

from local.deepseek import FakeModelServer, RecordedRequest, Reply
from shared.auth.access_tokens import User
from shared.db import Database


class Hold:
    """`hold(item)` is a scripted reply whose first request is marked in flight and stalled
    until `release()` (a later request for the same turn gets `item` at once);
    `await hold.arrived()` returns once it is in flight. No sleeping: the fake server holds
    the request for as long as the test needs."""

    def __init__(self, fake: FakeModelServer) -> None:
        self.fake = fake
        self._in_flight = threading.Event()

    def __call__(self, item: Reply) -> Any:
        def respond(request: RecordedRequest) -> Reply:
            if self._in_flight.is_set():
                return item
            self._in_flight.set()
            return item.stalled(after=0)

        return respond

    async def arrived(self) -> None:
        await asyncio.to_thread(self._in_flight.wait, 15)
        assert self._in_flight.is_set(), "the held model call never arrived"

    def release(self) -> None:
        self.fake.release()


def as_user(user_id: UUID) -> User:
    """The signed-in user the use cases take (claims as a verified token would give)."""
    return User(id=user_id, claims={"sub": str(user_id), "role": "authenticated"})


async def scalar(db: Database, query: Any, *params: Any) -> Any:
    """The first column of the first row of `query`, read as the service."""
    async with db.service() as conn:
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
    assert row is not None
    return next(iter(row.values()))


async def plan_row(db: Database, plan_id: UUID) -> dict[str, Any]:
    async with db.service() as conn:
        cur = await conn.execute("SELECT * FROM agent_plans WHERE id = %s", (plan_id,))
        row = await cur.fetchone()
    assert row is not None
    return dict(row)


async def set_plan_lease(db: Database, plan_id: UUID, *, seconds: float, **columns: Any) -> str:
    """Give the plan's lease to a stranger (an invocation elsewhere, or one that died) whose
    lease ends `seconds` from now (negative: already expired); returns the stranger's id."""
    owner = f"elsewhere-{uuid4().hex[:8]}"
    sets = "".join(f", {name} = %({name})s" for name in columns)
    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_plans SET lease_owner = %(owner)s, "
            f"lease_expires_at = now() + make_interval(secs => %(seconds)s){sets} "
            "WHERE id = %(id)s",
            {"owner": owner, "seconds": seconds, "id": plan_id, **columns},
        )
    return owner
