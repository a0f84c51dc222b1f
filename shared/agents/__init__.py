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

from shared.agents.approvals import (
    ALLOW,
    WAIT,
    ApprovalGate,
    DatabaseApprovals,
    Escalation,
    NoApprovals,
    ToolApproval,
    Verdict,
)
from shared.agents.errors import (
    AgentStopped,
    AwaitingApproval,
    CostCapReached,
    PlanCancelled,
    PlanNotWritten,
    PromptTooLarge,
    TurnStillRunning,
)
from shared.agents.executor import run_executor_step
from shared.agents.invoker import InProcessInvoker, Invoker
from shared.agents.outcomes import PlanOutcome, StepOutcome, TurnOutcome, TurnStarted
from shared.agents.planner import run_plan
from shared.agents.turns import request_cancel, run_turn, start_turn
from shared.llm.tokens import DeepSeekTokenizer, TokenCounter, count_prompt

__all__ = [
    "ALLOW",
    "WAIT",
    "AgentStopped",
    "ApprovalGate",
    "AwaitingApproval",
    "CostCapReached",
    "DatabaseApprovals",
    "DeepSeekTokenizer",
    "Escalation",
    "InProcessInvoker",
    "Invoker",
    "NoApprovals",
    "PlanCancelled",
    "PlanNotWritten",
    "PlanOutcome",
    "PromptTooLarge",
    "StepOutcome",
    "TokenCounter",
    "ToolApproval",
    "TurnOutcome",
    "TurnStarted",
    "TurnStillRunning",
    "Verdict",
    "count_prompt",
    "request_cancel",
    "run_executor_step",
    "run_plan",
    "run_turn",
    "start_turn",
]
