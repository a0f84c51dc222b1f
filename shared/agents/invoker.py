"""How one function reaches another: chat → planner, planner → executors.

The planner never calls an executor directly: it asks an `Invoker` to run a step, which may be
in this process (`InProcessInvoker`: tests, the local stack), another function over HTTP
(`shared.agents.http_invoker.HttpInvoker`), or a queue (`shared.queues.SqsInvoker`). Delivery
is at least once, so every target is idempotent: `run_plan` resumes a plan from the tables,
`run_executor_step` is keyed on (step, attempt). Whatever the transport, the tables are the
truth: the planner re-reads a step's row after its invocation returns.

An invoker that `hands_off` never waits: the planner hands it the runnable executor steps
(`start_step`), ends its invocation, and is resumed by a "resume plan" message when one of
them settles (`shared.agents.planner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from shared.agents.outcomes import PlanOutcome, StepOutcome
from shared.background import run_in_background
from shared.events import Publisher

if TYPE_CHECKING:
    from shared.services import Services


class Invoker(Protocol):
    """Runs a plan or a step somewhere."""

    hands_off: bool
    """True: steps are only handed over (`start_step`) and the planner does not wait."""

    async def run_plan(self, *, plan_id: UUID) -> PlanOutcome:
        """The planner's whole job for the plan (resuming it if it was begun); returns when
        that run has ended, paused, or handed its steps off."""
        ...

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        """One executor step attempt (resuming it if it was begun); returns when it ended."""
        ...

    async def start_step(self, *, plan_id: UUID, step_id: UUID, attempt: int) -> None:
        """Hand one executor step attempt over and return without waiting for it."""
        ...


class InProcessInvoker:
    """Runs plans and steps in this process; every event goes to `publisher`."""

    hands_off = False

    def __init__(self, services: Services, publisher: Publisher) -> None:
        self.services = services
        self.publisher = publisher

    async def run_plan(self, *, plan_id: UUID) -> PlanOutcome:
        from shared.agents.planner import run_plan

        await self.services.load_mcp_tools()  # the planner runs here: it offers them
        return await run_plan(
            self.services, plan_id=plan_id, publisher=self.publisher, invoker=self
        )

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        from shared.agents.executor import run_executor_step

        await self.services.load_mcp_tools()
        return await run_executor_step(
            self.services, step_id=step_id, attempt=attempt, publisher=self.publisher
        )

    async def start_step(self, *, plan_id: UUID, step_id: UUID, attempt: int) -> None:
        """Run the step in the background (`publisher` must stay open until it ends)."""
        run_in_background(self.run_step(step_id=step_id, attempt=attempt), name=f"step {step_id}")
