"""Async Postgres access: one small pool and the two kinds of unit of work.

* `Database.service()` — a transaction as the connecting role (the table owner): it bypasses RLS
  and is used for orchestration writes (plans, agents, dialogue, accounting).
* `Database.as_user(user_id)` — a transaction as Supabase's `authenticated` role with the user's
  JWT claims in `request.jwt.claims`, so `auth.uid()` and every RLS policy apply. With
  `read_only=True` the transaction is `READ ONLY`: Postgres itself refuses any write.

Both are safe behind Supabase's transaction pooler (Supavisor): no server-side prepared
statements, and all per-request state is `SET LOCAL`, scoped to the transaction.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Self
from uuid import UUID

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from shared.errors import ConfigurationError

Connection = AsyncConnection[DictRow]


class Database:
    """A lazily opened connection pool with service and per-user units of work."""

    def __init__(self, url: str | None, *, max_size: int = 2) -> None:
        if not url:
            raise ConfigurationError(
                "DATABASE_URL is not set: point it at your Supabase database "
                "(Project settings → Database → Connection string, transaction pooler), "
                "or run `python3 dev.py run`, which starts an embedded Postgres."
            )
        self.url = url
        self._pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            min_size=0,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True, "prepare_threshold": None, "row_factory": dict_row},
            connection_class=AsyncConnection[DictRow],
        )
        self._opened = False

    async def open(self) -> Self:
        """Open the pool (idempotent); it connects on first use."""
        if not self._opened:
            await self._pool.open()
            self._opened = True
        return self

    async def close(self) -> None:
        """Close every pooled connection."""
        if self._opened:
            await self._pool.close()
            self._opened = False

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @asynccontextmanager
    async def service(self) -> AsyncIterator[Connection]:
        """A transaction with the service's own privileges (RLS bypassed)."""
        await self.open()
        async with self._pool.connection() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def as_user(
        self,
        user_id: UUID,
        *,
        read_only: bool = False,
        claims: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[Connection]:
        """A transaction as the user (role `authenticated`, RLS applies), optionally read-only."""
        await self.open()
        all_claims = {"role": "authenticated", "aud": "authenticated", **(claims or {})}
        all_claims["sub"] = str(user_id)
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(_become_user(all_claims, read_only=read_only))
            yield conn


def _become_user(claims: Mapping[str, Any], *, read_only: bool) -> sql.Composed:
    # One round trip, sent with the simple protocol (no parameters) so several statements fit.
    statements: list[sql.Composable] = [sql.SQL("SET TRANSACTION READ ONLY")] if read_only else []
    statements.append(
        sql.SQL(
            "SELECT set_config('request.jwt.claims', {claims}, true), "
            "set_config('role', 'authenticated', true)"
        ).format(claims=sql.Literal(json.dumps(claims)))
    )
    return sql.SQL("; ").join(statements)
