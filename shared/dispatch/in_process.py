"""Running plans and steps in this process: the `Invoker` of tests and the local stack.

`InProcessInvoker` runs a plan's planner and its executors here, every event going to one
publisher (`shared.agents.ports.Invoker` says what any transport does; the others are
`http_invoker` and `sqs_invoker`). `run_turn` stores a message and answers it the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from shared.agents.outcomes import PlanOutcome, StepOutcome, TurnOutcome
from shared.agents.planner.user_turns import start_turn
from shared.events import Publisher
from shared.kernel.background import run_in_background

if TYPE_CHECKING:
    from shared.services import Services


class InProcessInvoker:
    """Runs plans and steps in this process; every event goes to `publisher`."""

    hands_off = False

    def __init__(self, services: Services, publisher: Publisher) -> None:
        self.services = services
        self.publisher = publisher

    async def run_plan(self, *, plan_id: UUID) -> PlanOutcome:
        from shared.agents.planner.runs import run_plan  # the agent core: off chat's cold start

        await self.services.load_mcp_tools()  # the planner runs here: it offers them
        return await run_plan(
            self.services, plan_id=plan_id, publisher=self.publisher, invoker=self
        )

    async def run_step(self, *, step_id: UUID, attempt: int) -> StepOutcome:
        from shared.agents.executor.steps import run_executor_step  # off chat's cold start

        await self.services.load_mcp_tools()
        return await run_executor_step(
            self.services, step_id=step_id, attempt=attempt, publisher=self.publisher
        )

    async def start_step(self, *, plan_id: UUID, step_id: UUID, attempt: int) -> None:
        """Run the step in the background (`publisher` must stay open until it ends)."""
        run_in_background(self.run_step(step_id=step_id, attempt=attempt), name=f"step {step_id}")


async def run_turn(
    services: Services,
    *,
    user_id: UUID,
    session_id: UUID | None,
    message: str,
    publisher: Publisher,
    client_message_id: str | None = None,
) -> TurnOutcome:
    """`start_turn`, then `run_plan` in this process (executor steps in-process too)."""
    started = await start_turn(
        services,
        user_id=user_id,
        session_id=session_id,
        message=message,
        client_message_id=client_message_id,
    )
    outcome = await InProcessInvoker(services, publisher).run_plan(plan_id=started.plan_id)
    return TurnOutcome(started, outcome)
