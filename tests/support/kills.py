"""Killing a runner at an exact write, with no mock and no patched internals.

`Kill` arms a trigger in the test database: the first write that matches `when` terminates its
own connection mid-statement, so that write never commits and the runner gets what a process
dying under it would leave behind — everything committed before stays, nothing after happens —
and sees the connection lost (`psycopg.OperationalError`), a failure of the infrastructure that
Parley leaves for the next invocation to resume, as it would a crash. (A `finally` still runs,
so a lease the runner held is given back at once; a real kill leaves it to expire, which the
sweeper tests reproduce with `tests.support.holds.set_plan_lease`.)

    async with Kill(db, "agent_chat_messages", "NEW.message_type = 'tool_result'"):
        ...  # the first tool result row is never stored: the runner "dies" there

`table` may name its schema (`realtime.messages`: kill at an event's `realtime.send()`).

`times=None` kills at every matching write (a poison message); `fired` says how often it did.
"""

from __future__ import annotations

import itertools
from types import TracebackType
from typing import Literal, Self

from psycopg import sql

from shared.db import Database

_ids = itertools.count()

_FUNCTION = """
CREATE OR REPLACE FUNCTION public.test_kill() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    -- A sequence, not a table: nextval is not rolled back with the killed transaction.
    strikes bigint := nextval(TG_ARGV[0]::regclass);
BEGIN
    IF TG_ARGV[2]::bigint = 0 OR strikes <= TG_ARGV[2]::bigint THEN
        RAISE WARNING 'killed by the test at %', TG_ARGV[1];
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(10);  -- the termination lands here, before anything is committed
    END IF;
    RETURN NEW;
END $$"""


class Kill:
    """One armed kill point: `table` and a trigger `WHEN` condition over NEW (and OLD)."""

    def __init__(
        self,
        db: Database,
        table: str,
        when: str,
        *,
        on: Literal["INSERT", "UPDATE"] = "INSERT",
        name: str | None = None,
        times: int | None = 1,
    ) -> None:
        self.db, self.table, self.when, self.on = db, table, when, on
        self.name = name or f"{on.lower()} on {table} when {when}"
        self.times = times
        self._id = f"test_kill_{next(_ids)}"

    @property
    def _table(self) -> sql.Identifier:
        return sql.Identifier(*self.table.split("."))

    @property
    def _sequence(self) -> sql.Identifier:
        # Qualified: the write may run under `search_path = ''` (`parley_private.send_events`).
        return sql.Identifier("public", self._id)

    async def arm(self) -> Self:
        ident, sequence = sql.Identifier(self._id), self._sequence
        async with self.db.service() as conn:
            await conn.execute(_FUNCTION)
            await conn.execute(sql.SQL("CREATE SEQUENCE {}").format(sequence))
            await conn.execute(
                sql.SQL(
                    "CREATE TRIGGER {trigger} BEFORE {on} ON {table} FOR EACH ROW "
                    "WHEN ({when}) EXECUTE FUNCTION public.test_kill({args})"
                ).format(
                    trigger=ident,
                    on=sql.SQL(self.on),
                    table=self._table,
                    when=sql.SQL(self.when),
                    args=sql.SQL(", ").join(
                        sql.Literal(a)
                        for a in (f"public.{self._id}", self.name, str(self.times or 0))
                    ),
                )
            )
        return self

    async def disarm(self) -> None:
        async with self.db.service() as conn:
            await conn.execute(
                sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                    sql.Identifier(self._id), self._table
                )
            )
            await conn.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(self._sequence))

    async def fired(self) -> int:
        """How many times the kill has struck so far."""
        async with self.db.service() as conn:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM {}"
                ).format(self._sequence)
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row["n"]) if self.times is None else min(int(row["n"]), self.times)

    async def __aenter__(self) -> Self:
        return await self.arm()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.disarm()
