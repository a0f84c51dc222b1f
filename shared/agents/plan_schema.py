"""The plan the planner writes through its `create_plan` tool, and its validation.

A plan is a small DAG of steps. Validation refuses: no steps or too many, duplicate step
numbers, unknown tools, dependencies on missing or later steps (which also rules out cycles),
and any step given to an executor that needs a write tool — executors are read-only, so writes
are the planner's own steps.

What the planner writes is paid at the strong model's output price, so the call is short:
`goal` may be left out (the user's message is the goal), a step's `step_number` defaults to
its position and its `assignee` to `executor`. `answer` says who writes the final answer
(see `planner`): the cheap executor model when it only gathers the results, the planner when
it needs judgement.
"""

from __future__ import annotations

import graphlib
from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_STEPS = 8
MAX_STEP_NUMBER = 1000
"""Step numbers need not be consecutive (10, 20, 30…), but they are stored as integers."""


class StepDraft(BaseModel):
    """One step of a plan."""

    model_config = ConfigDict(extra="forbid")

    step_number: int = Field(default=0, ge=0, description="Default: its position (1, 2, 3…).")
    description: str = Field(
        min_length=1, max_length=2000, description="What to do and report, self-contained."
    )
    assignee: Literal["executor", "planner"] = Field(
        default="executor", description="planner for a step that writes; executor (default) reads."
    )
    depends_on: list[int] = Field(
        default_factory=list, description="Earlier steps whose results this step needs."
    )
    tools: list[str] = Field(default_factory=list, description="The tools the step needs.")


class PlanDraft(BaseModel):
    """A plan as the model writes it (the `create_plan` tool's arguments)."""

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(default="", max_length=1000, description="Omit when the message says it.")
    steps: list[StepDraft] = Field(min_length=1, max_length=MAX_STEPS)
    answer: Literal["planner", "executor"] = Field(
        default="planner",
        description="Who writes the final answer from the results: executor when it only "
        "gathers them (lists, lookups); planner (default) when it needs judgement or advice.",
    )

    @model_validator(mode="after")
    def _numbered(self) -> PlanDraft:
        """A step without a number is numbered by its position."""
        for position, step in enumerate(self.steps, start=1):
            if step.step_number == 0:
                step.step_number = position
        return self


class InvalidPlan(ValueError):
    """A plan that must not run; `problems` says why, one line each (the model sees them)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def validate_plan(
    plan: PlanDraft, *, known_tools: Collection[str], write_tools: Collection[str]
) -> PlanDraft:
    """Return `plan` with steps in order if it is runnable, else raise `InvalidPlan`."""
    steps = sorted(plan.steps, key=lambda s: s.step_number)
    numbers = [s.step_number for s in steps]
    problems = [
        f"step {n} appears more than once" for n in sorted(set(numbers)) if numbers.count(n) > 1
    ]
    for step in steps:
        problems += _step_problems(step, set(numbers), known_tools, write_tools)
    cycle = _cycle(steps)
    if cycle:
        problems.append("steps depend on each other in a cycle: " + " → ".join(map(str, cycle)))
    if problems:
        raise InvalidPlan(problems)
    return plan.model_copy(update={"steps": steps})


def _step_problems(
    step: StepDraft, numbers: set[int], known: Collection[str], writes: Collection[str]
) -> list[str]:
    n, problems = step.step_number, []
    if n > MAX_STEP_NUMBER:
        problems.append(f"step {n}: number steps from 1 to {MAX_STEP_NUMBER} at most")
    for dep in step.depends_on:
        if dep not in numbers:
            problems.append(f"step {n} depends on step {dep}, which does not exist")
        elif dep >= n:
            problems.append(f"step {n} depends on step {dep}, which is not an earlier step")
    for tool in step.tools:
        if tool not in known:
            problems.append(f"step {n} names unknown tool {tool!r}")
        elif tool in writes and step.assignee == "executor":
            problems.append(
                f"step {n} needs write tool {tool!r} but executors are read-only: "
                "assign it to the planner"
            )
    return problems


def _cycle(steps: list[StepDraft]) -> list[int]:
    graph = {s.step_number: set(s.depends_on) for s in steps}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []
