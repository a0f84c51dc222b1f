"""What the agents need of the rest of Parley, as protocols: the one place they meet it.

How one function reaches another — chat → planner, planner → executors — is an `Invoker`.
The planner never calls an executor directly: it asks its invoker to run a step, which may be
in this process (`shared.dispatch.in_process`), another function over HTTP
(`shared.dispatch.http_invoker`), or a queue (`shared.dispatch.sqs_invoker`). Delivery is at
least once, so every target is idempotent: `run_plan` resumes a plan from the tables,
`run_executor_step` is keyed on (step, attempt). Whatever the transport, the tables are the
truth: the planner re-reads a step's row after its invocation returns.

An invoker that `hands_off` never waits: the planner hands it the runnable executor steps
(`start_step`), ends its invocation, and is resumed by a "resume plan" message when one of
them settles (`shared.agents.planner.runs`).

The clients the agents use — the database, the model, the tools — come as `AgentServices`;
`shared.services.Services`, the composition root, is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from uuid import UUID

if TYPE_CHECKING:
    from shared.agents.approval_gate import ApprovalGate
    from shared.agents.outcomes import PlanOutcome, StepOutcome
    from shared.db import Database
    from shared.kernel.settings import Settings
    from shared.llm import LLMClient, ModelRegistry
    from shared.llm.tokens import TokenCounter
    from shared.tools import ToolExecutor, ToolRegistry


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


class AgentServices(Protocol):
    """The clients an agent works with (built once per cold start by the composition root)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def llm(self) -> LLMClient: ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def tool_executor(self) -> ToolExecutor: ...

    @property
    def approvals(self) -> ApprovalGate: ...

    @property
    def tokens(self) -> TokenCounter: ...

    @property
    def models(self) -> ModelRegistry: ...

    @property
    def planner_budget(self) -> int:
        """A new planner's `token_budget`."""
        ...

    @property
    def executor_budget(self) -> int:
        """A new executor's `token_budget`."""
        ...
