"""Running a plan's steps: each as soon as its dependencies are done, independent ones at once.

Executor steps go through the `Invoker` (another function in production); the planner's own
steps run here. At most `EXECUTOR_CONCURRENCY` steps run at a time. Every decision is read
from the step rows, so a resumed run skips finished steps and re-runs unfinished ones with the
same attempt number (which resumes them in their threads). A step whose dependency did not
complete is `skipped`. Cancellation and the cost cap are checked whenever a step ends; running
steps see the same flags before their next model call, and are waited for, so nothing is left
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

from shared.agents.accounting import check_plan
from shared.agents.errors import AgentStopped, AwaitingApproval, StepsHandedOff
from shared.agents.events import emit_step_completed
from shared.agents.executor import run_planner_step
from shared.agents.invoker import Invoker
from shared.agents.model_calls import AgentRun
from shared.agents.outcomes import StepOutcome
from shared.db import approvals, leases, plans
from shared.db.records import PlanStep

ATTEMPT = 1
OPEN = frozenset({"pending", "running", "awaiting_approval"})
UNSETTLED = frozenset({"pending", "running"})


class StepScheduler:
    """Runs the steps of the planner's plan to their ends."""

    def __init__(self, planner: AgentRun, invoker: Invoker) -> None:
        self.planner = planner
        self.invoker = invoker
        self._slots = asyncio.Semaphore(planner.services.settings.executor_concurrency)
        self._running: dict[UUID, asyncio.Task[StepOutcome]] = {}
        self._tried: set[UUID] = set()
        self._handed: set[UUID] = set()

    async def run(self) -> list[PlanStep]:
        """Run every runnable step; return the steps as they ended. Raises when the plan must
        stop (cancelled, cost cap), waits for approval, or waits for handed-off steps."""
        await self._check()  # a resumed plan may have been cancelled while nobody ran it
        try:
            while True:
                steps = await self._skip_blocked(await self._steps())
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
                    task.result()
                await self._check()
        except AgentStopped:
            await self._finish_running(cancel=False)  # they stop at their own next check
            raise
        except BaseException:
            await self._finish_running(cancel=True)  # an unexpected error: stop like a crash
            raise
        steps = await self._steps()
        handed = [s.id for s in steps if s.id in self._handed and s.status in UNSETTLED]
        if handed:
            raise StepsHandedOff(handed)
        if any(step.status in OPEN for step in steps):
            raise AwaitingApproval("A step is waiting for the user's approval.")
        return steps

    async def _hand_off(self, steps: list[PlanStep]) -> None:
        """Hand each step to the invoker unless that was done already (and nothing changed)."""
        self._handed.update(step.id for step in steps)
        due = [step for step in steps if await self._due(step)]
        if not due:
            return
        plan_id = self.planner.plan.id
        await asyncio.gather(*(
            self.invoker.start_step(plan_id=plan_id, step_id=step.id, attempt=ATTEMPT)
            for step in due
        ))  # fmt: skip
        async with self.planner.services.db.service() as conn:
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

    async def _steps(self) -> list[PlanStep]:
        async with self.planner.services.db.service() as conn:
            return await plans.list_steps(conn, plan_id=self.planner.plan.id)

    def _ready(self, steps: Sequence[PlanStep]) -> list[PlanStep]:
        done = {s.step_number for s in steps if s.status == "completed"}
        return [
            s for s in steps
            if s.status in OPEN and s.id not in self._tried and set(s.depends_on) <= done
        ]  # fmt: skip

    async def _skip_blocked(self, steps: list[PlanStep]) -> list[PlanStep]:
        """Mark `skipped` every open step that depends on a step that did not complete."""
        blocked = {s.step_number for s in steps if s.status in ("failed", "skipped", "cancelled")}
        changed = False
        for step in steps:
            broken = sorted(set(step.depends_on) & blocked)
            if step.status == "pending" and broken:
                async with self.planner.services.db.service() as conn:
                    skipped = await plans.update_step(
                        conn, step_id=step.id, status="skipped",
                        error=f"not run: step {', '.join(map(str, broken))} did not complete",
                    )  # fmt: skip
                await emit_step_completed(
                    self.planner.emitter, skipped, thread_status=None, agent_id=None
                )
                changed = True
        return await self._steps() if changed else steps

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
            async with services.db.service() as conn:
                if not await leases.lease_is_live(conn, table="agent_plan_steps", row_id=step.id):
                    return

    async def _check(self) -> None:
        settings = self.planner.services.settings
        await check_plan(
            self.planner.services.db, self.planner.plan.id, cost_cap=settings.plan_max_cost_usd
        )

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
    in_flight = [s for s in steps
                 if s.executor_required and s.dispatched_at and s.status in UNSETTLED]  # fmt: skip
    if not in_flight:
        return True
    done = {s.step_number for s in steps if s.status == "completed"}
    ended = done | {s.step_number for s in steps if s.status in ("failed", "skipped", "cancelled")}
    return any(
        s.status == "pending" and not (s.executor_required and s.dispatched_at)
        and set(s.depends_on) <= ended
        for s in steps
    )  # fmt: skip
