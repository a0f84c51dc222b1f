"""The sweeper: finds work that nobody will finish and hands it on, or ends it cleanly.

Runs every minute — on AWS from an EventBridge schedule on the planner function, locally
inside `python3 dev.py run` (`SWEEP_INTERVAL_SECONDS`). One sweep:

1. fails plans still unfinished `PLAN_MAX_AGE_SECONDS` after they were created that no run is
   working on (`failed`, `error`, `done`; one waiting for the user's approval keeps waiting);
2. hands to the planner again (`start_plan`) the plans whose run lease expired while they were
   pending or executing (their runner died, or a parked plan's steps never resumed it), the
   ones never started, and the ones with an approval decided that no run has used — each at
   most once per expired lease;
3. with `INVOKER_TRANSPORT=sqs`: queues again the executor steps whose run lease expired, and
   fails the plans and steps of the messages in the dead-letter queues
   (`shared.usecases.dead_letters`);
4. folds the dashboards' daily rollups: the rows each backend added since the last sweep
   become the day's own (`shared.db.rollups`), so a dashboard reads a handful of rows a day;
5. deletes the detail of turns that ended longer ago than the `RETENTION_*_DAYS` settings
   keep it, in short batches, for at most 20 seconds (`shared.usecases.retention`; the rollups
   counted every row as it was written, so they keep the dashboards' history).

Marking a row re-driven and queueing its message happen in one transaction: a send that fails
leaves the row unmarked for the next sweep. What a sweep does to a plan is logged with the
plan's id; with tracing on, a re-driven plan goes on in the sweep's trace (its row keeps the
trace of the turn that made it; the executions opened from then on name the sweep's).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from shared.agents.planner.abandoning import fail_plan
from shared.agents.planner.scheduler import ATTEMPT
from shared.db import plans, rollups
from shared.dispatch.transport import open_publisher, start_plan
from shared.observability import logs
from shared.usecases.retention import apply_retention

if TYPE_CHECKING:
    from shared.services import Services

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SweepReport:
    """What one sweep did (the scheduled handler returns it; it lands in the function's log)."""

    plans_redriven: list[UUID] = field(default_factory=list)
    steps_redriven: list[UUID] = field(default_factory=list)
    plans_too_old: list[UUID] = field(default_factory=list)
    dead_plans: list[UUID] = field(default_factory=list)
    dead_steps: list[UUID] = field(default_factory=list)
    deleted: dict[str, int] = field(default_factory=dict)
    """Rows retention deleted, per kind of detail (`shared.usecases.retention`)."""

    def json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            name: [str(i) for i in ids]
            for name, ids in asdict(self).items()
            if isinstance(ids, list)
        }
        return found | {"deleted": dict(self.deleted)}

    @property
    def anything(self) -> bool:
        return any(asdict(self).values())


async def sweep(services: Services) -> SweepReport:
    """One sweep (see the module docstring)."""
    report = SweepReport()
    settings = services.settings
    publisher = open_publisher(services)
    try:
        report.plans_too_old = await _fail_old(services, publisher)
        async with services.db.service() as conn:
            report.plans_redriven = await plans.redrive_plans(
                conn,
                grace_seconds=settings.run_lease_seconds,
                max_age_seconds=settings.plan_max_age_seconds,
            )
            for plan_id in report.plans_redriven:
                with logs.bound(plan_id=plan_id):
                    await start_plan(services, plan_id=plan_id)
        if settings.invoker_transport == "sqs":
            await _sweep_queues(services, publisher, report)
        async with services.db.autocommit() as conn:
            await rollups.fold_rollups(conn)
        report.deleted = await apply_retention(services)
    finally:
        await publisher.aclose()
    if report.anything:
        log.warning("sweep: %s", report.json())
    return report


async def _fail_old(services: Services, publisher: Any) -> list[UUID]:
    settings = services.settings
    async with services.db.service() as conn:
        old = await plans.too_old_plans(conn, max_age_seconds=settings.plan_max_age_seconds)
    hours = settings.plan_max_age_seconds / 3600
    error = (
        f"This request did not finish within {hours:g} hour(s) and was stopped. Your message "
        "is saved; send it again to retry."
    )
    if old:
        log.warning("sweep: failing %d plan(s) older than PLAN_MAX_AGE_SECONDS", len(old))
    failed = []
    for plan_id in old:
        with logs.bound(plan_id=plan_id):
            ended = await fail_plan(services, plan_id, error=error, publisher=publisher)
        if ended == "failed":
            failed.append(plan_id)
    return failed


async def _sweep_queues(services: Services, publisher: Any, report: SweepReport) -> None:
    from shared.dispatch.sqs_invoker import SqsInvoker  # only with sqs
    from shared.usecases.dead_letters import handle_dead_letters  # only with sqs

    queue = SqsInvoker(services)
    async with services.db.service() as conn:
        steps = await plans.redrive_steps(conn)
        for plan_id, step_id in steps:
            with logs.bound(plan_id=plan_id, step_id=step_id, attempt=ATTEMPT):
                await queue.start_step(plan_id=plan_id, step_id=step_id, attempt=ATTEMPT)
    report.steps_redriven = [step_id for _, step_id in steps]
    dead = await handle_dead_letters(services, publisher)
    report.dead_plans, report.dead_steps = dead.plans_failed, dead.steps_failed
