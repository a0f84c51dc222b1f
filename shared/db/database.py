"""Async Postgres access: one small pool and the two kinds of unit of work.

* `Database.service()` — a transaction as the connecting role (the table owner): it bypasses RLS
  and is used for orchestration writes (plans, agents, dialogue, accounting);
  `Database.autocommit()` the same privileges for a unit that is a single statement (no
  `BEGIN`/`COMMIT`: the hot paths write each transition in one statement).
* `Database.as_user(user_id)` — a transaction as Supabase's `authenticated` role with the user's
  JWT claims in `request.jwt.claims`, so `auth.uid()` and every RLS policy apply. With
  `read_only=True` the transaction is `READ ONLY`: Postgres itself refuses any write.

Both are safe behind Supabase's transaction pooler (Supavisor): no server-side prepared
statements, and all per-request state is `SET LOCAL`, scoped to the transaction.

A user's unit cannot leave its transaction, role or claims: every statement sent in it is
checked (`user_statements`) and refused if it would end the transaction, change the role, the
session user or the claims, or set anything for the session; one that ended the transaction
anyway (through a function) stops the unit and its connection is closed. The unit ends with
its `COMMIT` (or `ROLLBACK`) and a reset of role, session user and settings in the same round
trip, so nothing it did can reach the next unit of work on the pooled connection.

Only Parley's own code may leave the user's role, and only for the end of the unit:
`back_to_service(conn)`, after the user's statements are done, runs the rest of the
transaction as the service — for a record that must commit or roll back with the user's
writes (a write tool's receipt, `shared.db.receipts`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Self, overload
from uuid import UUID

from psycopg import AsyncConnection, AsyncCopy, AsyncCursor, AsyncServerCursor, sql
from psycopg.abc import Params, Query, QueryNoTemplate
from psycopg.copy import AsyncWriter
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, Row, dict_row
from psycopg_pool import AsyncConnectionPool

from shared.db.user_statements import StatementRefused, check_user_statement
from shared.kernel.errors import ConfigurationError

Connection = AsyncConnection[DictRow]

RESET_SESSION = (
    "RESET SESSION AUTHORIZATION; RESET ROLE; RESET ALL; CLOSE ALL; UNLISTEN *; "
    "DISCARD TEMP; DISCARD SEQUENCES; SELECT pg_advisory_unlock_all()"
)
"""Back to the login role and the configured settings (search_path, claims, ...), and nothing
a user's unit left on the session: no cursor held open (`WITH HOLD`), no `LISTEN`, no temporary
table (the next unit could read it, or find it in place of a table of the same name), no
sequence's `currval`, no session advisory lock. `DISCARD ALL` less `DEALLOCATE ALL` / `DISCARD
PLANS` (Parley prepares no statements): `DISCARD ALL` itself cannot run in the same round trip
as the unit's `COMMIT` (Postgres refuses it in a multi-statement query)."""
_IN_TRANSACTION = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


class UnitEscaped(StatementRefused):
    """A user's unit of work found its transaction ended: nothing more runs on its connection."""

    title = "Unit of work escaped"


class PooledConnection(AsyncConnection[DictRow]):
    """A pooled connection that knows when it runs a user's unit of work."""

    user_unit = False
    """True while `Database.as_user` holds it: statements are checked before they are sent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.server_cursor_factory = NamedCursor

    async def commit(self) -> None:
        _refuse_in_user_unit(self, "commit()")
        await super().commit()

    async def rollback(self) -> None:
        _refuse_in_user_unit(self, "rollback()")
        await super().rollback()


class GuardedCursor(AsyncCursor[Row]):
    """Checks each statement of a user's unit of work before sending it (`user_statements`)
    and that the unit's transaction is still open after it."""

    __slots__ = ()

    @overload
    async def execute(
        self,
        query: QueryNoTemplate,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self: ...

    @overload
    async def execute(
        self, query: Query, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Self: ...

    async def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        guarded = _guarded(self, query)
        execute: Any = super().execute  # takes any query; its overloads split Template off
        await execute(query, params, prepare=prepare, binary=binary)
        if guarded:
            _check_open(self.connection)
        return self

    async def executemany(
        self, query: Query, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        guarded = _guarded(self, query)
        await super().executemany(query, params_seq, returning=returning)
        if guarded:
            _check_open(self.connection)

    async def stream(
        self,
        query: Query,
        params: Params | None = None,
        *,
        binary: bool | None = None,
        size: int = 1,
    ) -> AsyncIterator[Row]:
        _guarded(self, query)
        async for row in super().stream(query, params, binary=binary, size=size):
            yield row

    @asynccontextmanager
    async def copy(
        self, statement: Query, params: Params | None = None, *, writer: AsyncWriter | None = None
    ) -> AsyncIterator[AsyncCopy]:
        _guarded(self, statement)  # a user's unit refuses every COPY (`user_statements`)
        async with super().copy(statement, params, writer=writer) as copy:
            yield copy


class NamedCursor(AsyncServerCursor[Row]):
    """A server-side cursor (`conn.cursor(name=...)`): refused in a user's unit of work, whose
    statements it would send unchecked (and `WITH HOLD`, past the unit's end)."""

    __slots__ = ()

    def __init__(self, connection: AsyncConnection[Any], name: str, **kwargs: Any) -> None:
        super().__init__(connection, name, **kwargs)
        if getattr(connection, "user_unit", False):
            self._closed = True  # never declared: nothing to close on the server
            raise StatementRefused(
                "not allowed in a user's unit of work: a named (server-side) cursor"
            )


def _guarded(cursor: AsyncCursor[Any], query: Query) -> bool:
    """Check `query` if the cursor's connection runs a user's unit; True if it does."""
    conn = cursor.connection
    if not getattr(conn, "user_unit", False):
        return False
    _check_open(conn)
    if conn.info.parameter_status("standard_conforming_strings") == "off":  # None: not reported
        raise StatementRefused(
            "not allowed in a user's unit of work: any statement while "
            "standard_conforming_strings is off (the check reads strings as with it on)"
        )
    if isinstance(query, sql.Composable):
        text: str | bytes = query.as_string(conn)
    elif isinstance(query, str | bytes):
        text = query
    else:  # e.g. a t-string Template: what it sends is not known here
        raise StatementRefused(
            f"not allowed in a user's unit of work: a {type(query).__name__} query "
            "(only str, bytes and psycopg.sql are checked)"
        )
    check_user_statement(text.decode() if isinstance(text, bytes) else text)
    return True


def _check_open(conn: AsyncConnection[Any]) -> None:
    if conn.info.transaction_status not in _IN_TRANSACTION:
        raise UnitEscaped("the user's unit of work is no longer in its transaction")


def _refuse_in_user_unit(conn: PooledConnection, what: str) -> None:
    if conn.user_unit:
        raise StatementRefused(f"not allowed in a user's unit of work: {what}")


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
        self._pool: AsyncConnectionPool[PooledConnection] = AsyncConnectionPool(
            url,
            min_size=0,
            max_size=max_size,
            open=False,
            kwargs={
                "autocommit": True,
                "prepare_threshold": None,
                "row_factory": dict_row,
                "cursor_factory": GuardedCursor,
            },
            connection_class=PooledConnection,
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
    async def autocommit(self) -> AsyncIterator[Connection]:
        """A connection with no transaction open: each statement is a transaction of its
        own, with no `BEGIN`/`COMMIT` round trips — for a unit of work that is one statement
        (the service's privileges, as `service()`)."""
        await self.open()
        async with self._pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def as_user(
        self,
        user_id: UUID,
        *,
        read_only: bool = False,
        claims: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[Connection]:
        """A transaction as the user (role `authenticated`, RLS applies), optionally read-only.

        Its statements may not leave the transaction, the role or the claims (see the module).
        """
        await self.open()
        all_claims = {"role": "authenticated", "aud": "authenticated", **(claims or {})}
        all_claims["sub"] = str(user_id)
        async with self._pool.connection() as conn:
            try:
                await conn.execute(_become_user(all_claims, read_only=read_only))
                conn.user_unit = True
                yield conn
            except BaseException:
                await _end_user_unit(conn, "ROLLBACK")
                raise
            await _end_user_unit(conn, "COMMIT")


async def back_to_service(conn: Connection) -> None:
    """In a user's unit whose user statements are done: the rest of its transaction runs as
    the service (the connecting role, RLS bypassed). Nothing may run as the user after it."""
    if isinstance(conn, PooledConnection):
        conn.user_unit = False
    await conn.execute("RESET ROLE")


async def _end_user_unit(conn: PooledConnection, verb: str) -> None:
    """End the unit's transaction and reset the session in one round trip; close a connection
    whose state is unknown (the transaction ended early, or a query was cut off)."""
    conn.user_unit = False
    if conn.info.transaction_status in _IN_TRANSACTION:
        await conn.execute(f"{verb}; {RESET_SESSION}")
    else:
        await conn.close()


def _become_user(claims: Mapping[str, Any], *, read_only: bool) -> sql.Composed:
    # One round trip, sent with the simple protocol (no parameters) so several statements fit.
    return sql.SQL(
        "BEGIN{mode}; SELECT set_config('request.jwt.claims', {claims}, true), "
        "set_config('role', 'authenticated', true)"
    ).format(
        mode=sql.SQL(" READ ONLY" if read_only else ""),
        claims=sql.Literal(json.dumps(_storable(claims))),
    )


def _storable(value: Any) -> Any:
    """Claims without NUL characters: `auth.jwt()` casts them to jsonb, which refuses U+0000
    (user metadata in a Supabase JWT is the user's to write)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, Mapping):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value
