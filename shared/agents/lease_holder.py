"""One live run per plan and per step: a lease in the row, renewed while the run works.

Delivery is at least once, so two invocations for the same plan (or step) can arrive together.
The first takes the row's lease (`lease_owner`, `lease_expires_at`, `RUN_LEASE_SECONDS`); the
second finds it live and returns at once, without a model call, saying the work is running
elsewhere. While it works, the holder renews the lease every third of its length; when it
settles the row (waits for approval, ends) the same write gives the lease back. A holder that
died stops renewing, so once its lease has expired the next invocation takes it over and
resumes from the tables — that is how a plan whose runner died gets finished.

A holder that stalled so long that another invocation took its lease over learns so at its
next renewal: its work is cancelled where it stands, exactly as if its process had died
(`LeaseLost`), and the new holder carries on.

A planner that handed its steps to a queue *parks* the plan's lease instead of giving it back
(`Lease.park_seconds`): the plan still counts as running, and any resume may take it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from uuid import UUID, uuid4

import psycopg

from shared.db import Database, leases
from shared.db.leases import LeasedTable

logger = logging.getLogger(__name__)


class LeaseLost(Exception):
    """Another invocation took over the lease; this run's work was stopped."""


def new_owner() -> str:
    """A fresh lease owner: one per invocation (a random id, nothing about the host)."""
    return uuid4().hex


@dataclass(slots=True)
class Lease:
    """A lease this invocation holds on one row."""

    table: LeasedTable
    row_id: UUID
    owner: str
    seconds: float
    lost: bool = field(default=False, init=False)
    park_seconds: float | None = field(default=None, init=False)
    """Set (plans only): on leaving, park the lease for this long instead of giving it back."""
    settled: bool = field(default=False, init=False)
    """Set when a statement that settled the row gave the lease back with it: nothing to
    give back on leaving."""


@asynccontextmanager
async def holding(db: Database, lease: Lease) -> AsyncIterator[Lease]:
    """Keep `lease` renewed while the body runs, and give it back after.

    Raises `LeaseLost` (instead of finishing the body) when another invocation took it over.
    """
    worker = asyncio.current_task()
    assert worker is not None
    finished = False

    def stop_work() -> None:
        if not finished:
            lease.lost = True
            worker.cancel()

    beat = asyncio.create_task(_renew_until_lost(db, lease, stop_work))
    try:
        yield lease
    except asyncio.CancelledError:
        if lease.lost and worker.uncancel() == 0:
            raise LeaseLost(f"{lease.table} {lease.row_id} is run by another invocation") from None
        raise
    finally:
        finished = True
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
        if not lease.lost and not lease.settled:
            await asyncio.shield(give_back(db, lease))


async def _renew_until_lost(db: Database, lease: Lease, stop_work: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(lease.seconds / 3)
        try:
            async with db.autocommit() as conn:
                state = await leases.renew(
                    conn,
                    table=lease.table,
                    row_id=lease.row_id,
                    owner=lease.owner,
                    seconds=lease.seconds,
                )
        except psycopg.Error:
            # A blip: try again next beat. If it lasts past expiry, another run may take over,
            # and the next successful renewal finds that out.
            logger.warning("could not renew the lease on %s %s", lease.table, lease.row_id)
            continue
        if state == "taken":
            logger.warning("lease on %s %s was taken over", lease.table, lease.row_id)
            stop_work()
        if state != "renewed":
            return


async def give_back(db: Database, lease: Lease) -> None:
    """Give the lease back (or park it), best effort: if this fails it expires."""
    try:
        async with db.autocommit() as conn:
            if lease.park_seconds is not None and lease.table == "agent_plans":
                await leases.park_plan(
                    conn, plan_id=lease.row_id, owner=lease.owner, seconds=lease.park_seconds
                )
            else:
                await leases.release(
                    conn, table=lease.table, row_id=lease.row_id, owner=lease.owner
                )
    except psycopg.Error:
        logger.warning(
            "could not release the lease on %s %s; it expires", lease.table, lease.row_id
        )
