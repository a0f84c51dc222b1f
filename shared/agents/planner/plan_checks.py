"""Reading a `create_plan` call into steps, or into the problems the model is told to fix.

On top of `plan_schema.validate_plan` (DAG, known tools, no writes for executors), the agent
core refuses what would break an executor's small budget: an executor step must name the read
tools it needs, and their schemas must leave room in the executor's budget for the task and
its results (a third of the budget at most).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from shared.agents.budget import UTF8_BOUND
from shared.agents.plan_schema import InvalidPlan, PlanDraft, validate_plan
from shared.db.plans import NewStep
from shared.llm import ToolCall
from shared.llm.tokens import TokenCounter, count_tools
from shared.tools import ToolRegistry

MAX_PROBLEMS = 10
TOOL_SHARE = 3
"""An executor step's tool schemas may take 1/3 of the executor's budget."""


def read_plan(
    call: ToolCall, *, registry: ToolRegistry, counter: TokenCounter, executor_budget: int
) -> PlanDraft | list[str]:
    """The validated plan of a `create_plan` call, or the problems with it."""
    if not call.valid:
        return [f"the arguments are not usable: {call.invalid_reason}"]
    try:
        draft = PlanDraft.model_validate(dict(call.arguments))
    except ValidationError as exc:
        problems = [_problem(err) for err in exc.errors(include_url=False, include_input=False)]
        if len(problems) > MAX_PROBLEMS:
            more = f"and {len(problems) - MAX_PROBLEMS} more problems (fix these first)"
            problems = [*problems[:MAX_PROBLEMS], more]
        return problems
    writes = {tool.name for tool in registry if tool.access == "write"}
    try:
        draft = validate_plan(draft, known_tools={t.name for t in registry}, write_tools=writes)
    except InvalidPlan as exc:
        return exc.problems
    problems = _executor_problems(draft, registry, counter, executor_budget)
    return problems or draft


def new_steps(draft: PlanDraft) -> list[NewStep]:
    """The plan's steps as the data layer stores them."""
    return [
        NewStep(s.step_number, s.description, s.assignee == "executor", s.depends_on, s.tools)
        for s in draft.steps
    ]


def _executor_problems(
    draft: PlanDraft, registry: ToolRegistry, counter: TokenCounter, budget: int
) -> list[str]:
    problems = []
    limit = budget // TOOL_SHARE
    for step in draft.steps:
        if step.assignee != "executor":
            continue
        if not step.tools:
            problems.append(
                f"step {step.step_number} is for an executor but names no tools: list "
                "the read tools it needs"
            )
            continue
        schemas = [s for s in (_wire(registry, name) for name in step.tools) if s]
        if count_tools(UTF8_BOUND, schemas) <= limit:
            continue  # fits by its bytes: no need to count it exactly
        size = count_tools(counter, schemas)
        if size > limit:
            problems.append(
                f"step {step.step_number} gives an executor tools too large for its budget "
                f"({size} tokens of tool schemas; at most {limit}): split it into smaller steps"
            )
    return problems


def _wire(registry: ToolRegistry, name: str) -> Mapping[str, Any] | None:
    tool = registry.get(name)
    return tool.definition.as_openai_tool() if tool is not None else None


def _problem(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
    return f"{where}: {error.get('msg', 'invalid')}"
