"""The agents: a planner that answers, uses tools or plans, and read-only executors it delegates to.

Three entry points, one per function (`functions/*` put HTTP in front of each):

    started = await start_turn(services, user_id=..., session_id=None, message="Plan my week",
                               client_message_id="c-1")        # stores the message; no model
    outcome = await run_plan(services, plan_id=started.plan_id, emitter=emitter,
                             invoker=invoker)                    # the planner's whole job
    step = await run_executor_step(services, step_id=..., attempt=1, publisher=publisher)

`run_turn` is the first two in one call (tests, the local stack); `request_cancel` flags a plan.
Everything is stored before it is published and every handler is idempotent: `start_turn` on
`client_message_id`, `run_plan` by resuming from the tables, `run_executor_step` on
(step, attempt); a run lease in the row keeps a plan or step to one live run at a time
(`leases`). Executors are reached through an `Invoker` (in-process here); destructive tools
and escalations go through the `ApprovalGate` of `services.approvals` (by default the user
decides, through `agent_approvals`; use cases in `shared.approvals`).

Modules: `turns` (entry points), `planner` (the planner's loop), `plan_runner` (steps in
dependency order, concurrently — or handed to a queue), `executor` + `step_loop` +
`step_setup` (one step's agent), `questions` (the planner answering executors), `finishing`
(how a run ends), `abandoning` (ending what no run will finish), `history` (histories rebuilt
from rows), `budget` (prompts within budgets, counted by `shared.llm.tokens`), `accounting`,
`control_tools`, `prompts`, `approvals`, `leases`, `invoker` + `http_invoker`, `events`,
`errors`, `outcomes`.
"""

from typing import TYPE_CHECKING

from shared.lazy import lazy_exports

if TYPE_CHECKING:
    from shared.agents.approvals import (
        ALLOW as ALLOW,
    )
    from shared.agents.approvals import (
        WAIT as WAIT,
    )
    from shared.agents.approvals import (
        ApprovalGate as ApprovalGate,
    )
    from shared.agents.approvals import (
        DatabaseApprovals as DatabaseApprovals,
    )
    from shared.agents.approvals import (
        Escalation as Escalation,
    )
    from shared.agents.approvals import (
        NoApprovals as NoApprovals,
    )
    from shared.agents.approvals import (
        ToolApproval as ToolApproval,
    )
    from shared.agents.approvals import (
        Verdict as Verdict,
    )
    from shared.agents.errors import (
        AgentStopped as AgentStopped,
    )
    from shared.agents.errors import (
        AwaitingApproval as AwaitingApproval,
    )
    from shared.agents.errors import (
        CostCapReached as CostCapReached,
    )
    from shared.agents.errors import (
        PlanCancelled as PlanCancelled,
    )
    from shared.agents.errors import (
        PlanNotWritten as PlanNotWritten,
    )
    from shared.agents.errors import (
        PromptTooLarge as PromptTooLarge,
    )
    from shared.agents.errors import (
        TurnStillRunning as TurnStillRunning,
    )
    from shared.agents.executor import (
        run_executor_step as run_executor_step,
    )
    from shared.agents.invoker import (
        InProcessInvoker as InProcessInvoker,
    )
    from shared.agents.invoker import (
        Invoker as Invoker,
    )
    from shared.agents.outcomes import (
        PlanOutcome as PlanOutcome,
    )
    from shared.agents.outcomes import (
        StepOutcome as StepOutcome,
    )
    from shared.agents.outcomes import (
        TurnOutcome as TurnOutcome,
    )
    from shared.agents.outcomes import (
        TurnStarted as TurnStarted,
    )
    from shared.agents.planner import (
        run_plan as run_plan,
    )
    from shared.agents.turns import (
        request_cancel as request_cancel,
    )
    from shared.agents.turns import (
        run_turn as run_turn,
    )
    from shared.agents.turns import (
        start_turn as start_turn,
    )
    from shared.llm.tokens import (
        DeepSeekTokenizer as DeepSeekTokenizer,
    )
    from shared.llm.tokens import (
        TokenCounter as TokenCounter,
    )
    from shared.llm.tokens import (
        count_prompt as count_prompt,
    )

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "shared.agents.approvals": (
            "ALLOW",
            "WAIT",
            "ApprovalGate",
            "DatabaseApprovals",
            "Escalation",
            "NoApprovals",
            "ToolApproval",
            "Verdict",
        ),
        "shared.agents.errors": (
            "AgentStopped",
            "AwaitingApproval",
            "CostCapReached",
            "PlanCancelled",
            "PlanNotWritten",
            "PromptTooLarge",
            "TurnStillRunning",
        ),
        "shared.agents.executor": ("run_executor_step",),
        "shared.agents.invoker": ("InProcessInvoker", "Invoker"),
        "shared.agents.outcomes": ("PlanOutcome", "StepOutcome", "TurnOutcome", "TurnStarted"),
        "shared.agents.planner": ("run_plan",),
        "shared.agents.turns": ("request_cancel", "run_turn", "start_turn"),
        "shared.llm.tokens": ("DeepSeekTokenizer", "TokenCounter", "count_prompt"),
    },
)
