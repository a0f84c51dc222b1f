"""Running a plan's steps: each as soon as its dependencies are done, independent ones at once.

Executor steps go through the `Invoker` (another function in production); the planner's own
steps run here. At most `EXECUTOR_CONCURRENCY` steps run at a time. The scheduler starts from
the step rows as the planner has them (stored with the plan, or read when the run opened) and
keeps each one as its run returns it, so a resumed run skips finished steps and re-runs
unfinished ones with the same attempt number (which resumes them in their threads); when all
have ended it reads the rows once more, with the plan — the tables are the truth. A step whose
dependency did not complete is `skipped`. Cancellation and the cost cap are checked whenever a
step ends (on the plan's state as the step's last statement returned it); running steps see
the same flags before their next model call, and are waited for, so nothing is left
half-written. A step another invocation is working on (a redelivered request still running)
is waited for while its lease is live, then run again: that returns its outcome, or resumes it
if that invocation died.

With an invoker that `hands_off` (a queue), executor steps are handed over instead of awaited:
each runnable one once (`dispatched_at`; again only after a decision on its approval), the
planner's own steps still run here, and when nothing is left to run here while handed-off
steps are unsettled the run raises `StepsHandedOff` — the planner's invocation ends, and the
step that settles sends the plan's resume. `has_work` tells a resume whether it has anything
to do at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from uuid import UUID

from shared.agents.accounting import check, read_control
from shared.agents.errors import AgentStopped, AwaitingApproval, StepsHandedOff
from shared.agents.event_data import step_completed_data
from shared.agents.executor.steps import run_planner_step
from shared.agents.model_calls import AgentRun
from shared.agents.outcomes import StepOutcome
from shared.agents.ports import Invoker
from shared.db import approvals, leases, plans
from shared.db.records import PlanStep
from shared.db.transitions import Control

ATTEMPT = 1
OPEN = frozenset({"pending", "running", "awaiting_approval"})
UNSETTLED = frozenset({"pending", "running"})


class StepScheduler:
    """Runs the steps of the planner's plan to their ends."""

    def __init__(
        self,
        planner: AgentRun,
        invoker: Invoker,
        steps: Sequence[PlanStep],
        control: Control | None = None,
    ) -> None:
        self.planner = planner
        self.invoker = invoker
        self.steps = {step.id: step for step in steps}
        self.control = control
        """The plan's state as the scheduler last saw it (fresh when `run` returns)."""
        self._slots = asyncio.Semaphore(planner.services.settings.executor_concurrency)
        self._running: dict[UUID, asyncio.Task[StepOutcome]] = {}
        self._tried: set[UUID] = set()
        self._handed: set[UUID] = set()

    async def run(self) -> list[PlanStep]:
        """Run every runnable step; return the steps as they ended. Raises when the plan must
        stop (cancelled, cost cap), waits for approval, or waits for handed-off steps."""
        await self._check(self.control)  # a resumed plan may have been cancelled meanwhile
        try:
            while True:
                steps = await self._skip_blocked(self._steps())
                ready = self._ready(steps)
                self._tried.update(step.id for step in ready)
                if self.invoker.hands_off:
                    await self._hand_off([s for s in ready if s.executor_required])
                    ready = [s for s in ready if not s.executor_required]
                for step in ready:
                    self._running[step.id] = asyncio.create_task(self._run_one(step))
                if not self._running:
                    break
                done, _ = await asyncio.wait(
                    self._running.values(), return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    self._running = {k: t for k, t in self._running.items() if t is not task}
                    await self._check(self._settled(task.result()))
        except AgentStopped:
            await self._finish_running(cancel=False)  # they stop at their own next check
            raise
        except BaseException:
            await self._finish_running(cancel=True)  # an unexpected error: stop like a crash
            raise
        steps = await self._reread()
        handed = [s.id for s in steps if s.id in self._handed and s.status in UNSETTLED]
        if handed:
            raise StepsHandedOff(handed)
        if any(step.status in OPEN for step in steps):
            raise AwaitingApproval("A step is waiting for the user's approval.")
        return steps

    def _steps(self) -> list[PlanStep]:
        return sorted(self.steps.values(), key=lambda step: step.step_number)

    def _settled(self, outcome: StepOutcome) -> Control | None:
        """Keep the step as its run left it; the plan's state that run saw, if it says."""
        step = self.steps[outcome.step_id]
        self.steps[step.id] = step._replace(
            status=outcome.status, result=outcome.result, error=outcome.error
        )
        return outcome.control

    async def _reread(self) -> list[PlanStep]:
        """The plan's state and its steps, as stored (every step has ended here)."""
        async with self.planner.services.db.autocommit() as conn:
            plan, steps = await plans.plan_with_steps(conn, plan_id=self.planner.plan.id)
        self.steps = {step.id: step for step in steps}
        self.control = Control.of(plan)
        check(self.control, cost_cap=self.planner.services.settings.plan_max_cost_usd)
        return steps

    async def _hand_off(self, steps: list[PlanStep]) -> None:
        """Hand each step to the invoker unless that was done already (and nothing changed)."""
        self._handed.update(step.id for step in steps)
        due = [step for step in steps if await self._due(step)]
        if not due:
            return
        plan_id = self.planner.plan.id
        await asyncio.gather(
            *(
                self.invoker.start_step(plan_id=plan_id, step_id=step.id, attempt=ATTEMPT)
                for step in due
            )
        )
        async with self.planner.services.db.autocommit() as conn:
            await plans.mark_dispatched(conn, step_ids=[step.id for step in due])

    async def _due(self, step: PlanStep) -> bool:
        if step.dispatched_at is None:
            return True
        if step.status != "awaiting_approval":
            return False  # handed over already: its message is queued, or it is running
        async with self.planner.services.db.service() as conn:
            pending = await approvals.list_approvals(conn, plan_id=step.plan_id, status="pending")
            decided = await approvals.last_decision_at(conn, step_id=step.id)
        if any(approval.step_id == step.id for approval in pending):
            return False  # still waiting for the user
        return decided is not None and decided > step.dispatched_at

    def _ready(self, steps: Sequence[PlanStep]) -> list[PlanStep]:
        done = {s.step_number for s in steps if s.status == "completed"}
        return [
            s
            for s in steps
            if s.status in OPEN and s.id not in self._tried and set(s.depends_on) <= done
        ]

    async def _skip_blocked(self, steps: list[PlanStep]) -> list[PlanStep]:
        """Mark `skipped` every open step that depends on a step that did not complete."""
        blocked = {s.step_number for s in steps if s.status in ("failed", "skipped", "cancelled")}
        for step in steps:
            broken = sorted(set(step.depends_on) & blocked)
            if step.status == "pending" and broken:
                emitter = self.planner.emitter
                async with emitter.unit() as (conn, outbox):
                    skipped = await plans.update_step(
                        conn,
                        step_id=step.id,
                        status="skipped",
                        error=f"not run: step {', '.join(map(str, broken))} did not complete",
                    )
                    outbox.add(
                        "step_completed",
                        step_completed_data(skipped, None),
                        plan_id=skipped.plan_id,
                    )
                self.steps[step.id] = skipped
        return self._steps()

    async def _run_one(self, step: PlanStep) -> StepOutcome:
        async with self._slots:
            while True:
                outcome = await self._invoke(step)
                # A run that did its part leaves the step settled; `running`/`pending` means it
                # is being worked on elsewhere (even from a transport that drops the flag).
                if not outcome.running_elsewhere and outcome.status not in UNSETTLED:
                    return outcome
                await self._wait_while_leased(step)

    async def _invoke(self, step: PlanStep) -> StepOutcome:
        if step.executor_required:
            return await self.invoker.run_step(step_id=step.id, attempt=ATTEMPT)
        return await run_planner_step(
            self.planner.services, step_id=step.id, attempt=ATTEMPT, emitter=self.planner.emitter
        )

    async def _wait_while_leased(self, step: PlanStep) -> None:
        services = self.planner.services
        pause = services.settings.run_lease_seconds / 3
        while True:
            await asyncio.sleep(pause)  # polling the row: its holder may be another process
            async with services.db.autocommit() as conn:
                if not await leases.lease_is_live(conn, table="agent_plan_steps", row_id=step.id):
                    return

    async def _check(self, control: Control | None) -> None:
        """Stop if the plan must (on `control`, the state a step's run saw; None: read now)."""
        services = self.planner.services
        self.control = control or await read_control(services.db, self.planner.plan.id)
        check(self.control, cost_cap=services.settings.plan_max_cost_usd)

    async def _finish_running(self, *, cancel: bool) -> None:
        tasks = list(self._running.values())
        self._running.clear()
        for task in tasks if cancel else ():
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def has_work(steps: Sequence[PlanStep]) -> bool:
    """Whether a resume of a plan waiting for handed-off steps has anything to do now: no
    handed-off step is still unsettled (the planner goes on: synthesis, its own steps, an
    approval), or a step can start (its dependencies completed) or must be skipped (one of
    them did not)."""
    in_flight = [
        s for s in steps if s.executor_required and s.dispatched_at and s.status in UNSETTLED
    ]
    if not in_flight:
        return True
    done = {s.step_number for s in steps if s.status == "completed"}
    ended = done | {s.step_number for s in steps if s.status in ("failed", "skipped", "cancelled")}
    return any(
        s.status == "pending"
        and not (s.executor_required and s.dispatched_at)
        and set(s.depends_on) <= ended
        for s in steps
    )
