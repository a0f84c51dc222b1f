"""Retention: the detail of turns that ended long ago is deleted, as the settings say.

What grows with every turn and what stays (docs/storage.md):

* kept until the user deletes the session — what they see: the session, their messages, the
  answers, the plans with their steps and approvals (and the session's planner);
* deleted `RETENTION_*_DAYS` days after the turn ended, by the sweeper
  (`shared.db.retention_batches`: in batches of `RETENTION_BATCH_PLANS` turns, one short statement
  each) — the agents' dialogue (`dialogue`: their messages and executor agents), the
  planner's internal tool rounds (`tool_rounds`), the runs' detail (`executions`, with the
  steps' threads they hold; the dashboards' daily rollups keep their history) and the write
  receipts (`receipts`). 0 keeps that detail as long as the session;
* deleted for good `RETENTION_DELETED_SESSIONS_DAYS` days after the user deleted it — a
  session with everything of it (`purge_deleted_sessions`: a batch of turns a statement).

Plans running, waiting for the user or leased are never touched (they have not ended). Readers
say what was removed instead of showing a gap (`removed_notes`): the plan view, the timeline,
the messages with `include=internal` and the transcript each name what retention deleted of
the turns they show.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from shared.db import retention_batches
from shared.db.database import Connection
from shared.db.records import Retained
from shared.db.retention_batches import RETAINED
from shared.wire.sessions import RemovedDetail

if TYPE_CHECKING:
    from shared.kernel.settings import Settings
    from shared.services import Services

log = logging.getLogger(__name__)

SECONDS_PER_SWEEP = 20.0
"""Most time one sweep spends on retention (or half the sweep interval, when shorter): a
backlog — retention newly turned on over a year of turns — is worked off over several sweeps."""

SETTING: dict[Retained, str] = {
    "dialogue": "RETENTION_DIALOGUE_DAYS",
    "tool_rounds": "RETENTION_TOOL_ROUNDS_DAYS",
    "executions": "RETENTION_EXECUTIONS_DAYS",
    "receipts": "RETENTION_RECEIPTS_DAYS",
}
WHAT: dict[Retained, str] = {
    "dialogue": "The agents' dialogue of this turn (their messages)",
    "tool_rounds": "The planner's tool calls of this turn and their results",
    "executions": "The runs' detail of this turn (each agent run's tokens, cost and timing, "
    "and each step's thread; the turn's totals are kept on the plan)",
    "receipts": "The write receipts of this turn",
}


def kept_days(settings: Settings) -> dict[Retained, int]:
    """Days each kind of detail is kept after its turn ended (0: as long as the session)."""
    return {
        "dialogue": settings.retention_dialogue_days,
        "tool_rounds": settings.retention_tool_rounds_days,
        "executions": settings.retention_executions_days,
        "receipts": settings.retention_receipts_days,
    }


async def apply_retention(services: Services, *, seconds: float | None = None) -> dict[str, int]:
    """Delete what the settings no longer keep, a batch of turns at a time, one kind after
    another in turn, then deleted sessions, until nothing is left to delete or `seconds` are
    up; the rows deleted per kind of detail (and `deleted_turns`, `deleted_sessions`: what the
    purge of deleted sessions removed). Each batch is a statement (a transaction) of its own."""
    settings = services.settings
    if seconds is None:
        seconds = min(SECONDS_PER_SWEEP, settings.sweep_interval_seconds / 2)
    deadline = time.monotonic() + seconds
    days = kept_days(settings)
    pending = [what for what in RETAINED if days[what] > 0]
    deleted: dict[str, int] = {}
    async with services.db.autocommit() as conn:
        while pending and time.monotonic() < deadline:
            for what in list(pending):
                # No mark of the rollups to wait for: their triggers counted each row in the
                # statement that wrote it (revision 5a0c1e2b0701), so any committed row may go.
                batch = await retention_batches.delete_batch(
                    conn, what=what, days=days[what], batch=settings.retention_batch_plans
                )
                if batch.rows:
                    deleted[what] = deleted.get(what, 0) + batch.rows
                if batch.plans < settings.retention_batch_plans:
                    pending.remove(what)  # caught up (or a leased plan stops it: next sweep)
        if settings.retention_deleted_sessions_days > 0:
            await _purge_deleted_sessions(conn, settings, deadline, deleted)
    if deleted:
        log.info("retention: deleted %s", deleted)
    return deleted


async def _purge_deleted_sessions(
    conn: Connection, settings: Settings, deadline: float, deleted: dict[str, int]
) -> None:
    """Sessions their users deleted long enough ago, gone for good — a batch of turns at a
    time, until none is left or time is up (counted in `deleted` as turns and sessions)."""
    days, batch = settings.retention_deleted_sessions_days, settings.retention_batch_plans
    while time.monotonic() < deadline:
        purge = await retention_batches.purge_deleted_sessions(conn, days=days, batch=batch)
        for what, count in (("deleted_turns", purge.plans), ("deleted_sessions", purge.sessions)):
            if count:
                deleted[what] = deleted.get(what, 0) + count
        if max(purge) < batch:
            return  # caught up


async def removed_details(
    conn: Connection, plan_ids: Iterable[UUID | None], kinds: Sequence[Retained]
) -> list[RemovedDetail]:
    """What retention deleted of these plans, of `kinds`, each with a note saying so (one
    statement; none when there is no plan)."""
    wanted = sorted({plan_id for plan_id in plan_ids if plan_id is not None})
    if not wanted:
        return []
    found = await retention_batches.removed(conn, plan_ids=wanted, kinds=kinds)
    place = {plan_id: index for index, plan_id in enumerate(wanted)}
    order = {what: index for index, what in enumerate(RETAINED)}
    found.sort(key=lambda r: (place[r.plan_id], order[r.what]))
    return [_note(r.plan_id, r.what, r.kept_days) for r in found]


def _note(plan_id: UUID, what: Retained, days: int | None) -> RemovedDetail:
    after = f"{days} days after the turn ended" if days else "after the turn ended"
    return RemovedDetail(
        plan_id=plan_id,
        what=what,
        kept_days=days,
        note=f"{WHAT[what]} was deleted {after}, as {SETTING[what]} says.",
    )
