"""The agents: a planner that answers, uses tools or plans, and read-only executors it delegates to.

Three entry points, one per function (`functions/*` put HTTP in front of each):

    started = await start_turn(services, user_id=..., session_id=None, message="Plan my week",
                               client_message_id="c-1")        # stores the message; no model
    outcome = await run_plan(services, plan_id=started.plan_id, emitter=emitter,
                             invoker=invoker)                    # the planner's whole job
    step = await run_executor_step(services, step_id=..., attempt=1, publisher=publisher)

Everything is stored before it is published and every handler is idempotent: `start_turn` on
`client_message_id`, `run_plan` by resuming from the tables, `run_executor_step` on
(step, attempt); a run lease in the row keeps a plan or step to one live run at a time
(`leases`). What the agents need of the rest is in `ports`: the `Invoker` that reaches
executors (`shared.dispatch` has the transports; `shared.dispatch.in_process.run_turn` is a
turn's two steps in one call) and the services they use. Destructive tools and escalations go
through the `ApprovalGate` of `services.approvals` (by default the user decides, through
`agent_approvals`; use cases in `shared.usecases.approval_decisions`).

`planner/`: a user's turn (`user_turns`), the planner's loop (`plans`), steps in dependency
order (`scheduler`), how a run ends (`finishing`) and ending what no run will finish
(`abandoning`). `executor/`: one step's agent (`steps`, `step_loop`, `step_setup`). Beside
them, what both use: `history` (histories rebuilt from rows), `budget` (prompts within
budgets), `model_calls`, `tool_runs`, `questions` (the planner answering executors),
`accounting`, `control_tools`, `plan_schema`, `prompts`, `approval_gate`, `leases`,
`events`, `errors`, `outcomes`.
"""

from typing import TYPE_CHECKING

from shared.kernel.lazy import lazy_exports

if TYPE_CHECKING:
    from shared.agents.approval_gate import (
        ALLOW as ALLOW,
    )
    from shared.agents.approval_gate import (
        WAIT as WAIT,
    )
    from shared.agents.approval_gate import (
        ApprovalGate as ApprovalGate,
    )
    from shared.agents.approval_gate import (
        DatabaseApprovals as DatabaseApprovals,
    )
    from shared.agents.approval_gate import (
        Escalation as Escalation,
    )
    from shared.agents.approval_gate import (
        NoApprovals as NoApprovals,
    )
    from shared.agents.approval_gate import (
        ToolApproval as ToolApproval,
    )
    from shared.agents.approval_gate import (
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
    from shared.agents.executor.steps import (
        run_executor_step as run_executor_step,
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
    from shared.agents.planner.runs import (
        run_plan as run_plan,
    )
    from shared.agents.planner.user_turns import (
        request_cancel as request_cancel,
    )
    from shared.agents.planner.user_turns import (
        start_turn as start_turn,
    )
    from shared.agents.ports import (
        AgentServices as AgentServices,
    )
    from shared.agents.ports import (
        Invoker as Invoker,
    )

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "shared.agents.approval_gate": (
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
        "shared.agents.executor.steps": ("run_executor_step",),
        "shared.agents.outcomes": ("PlanOutcome", "StepOutcome", "TurnOutcome", "TurnStarted"),
        "shared.agents.planner.runs": ("run_plan",),
        "shared.agents.planner.user_turns": ("request_cancel", "start_turn"),
        "shared.agents.ports": ("AgentServices", "Invoker"),
    },
)
