"""Plan validation: the DAG rules and the read-only rule for executors."""

from __future__ import annotations

import pytest

from shared.agents.plan_schema import InvalidPlan, PlanDraft, StepDraft, validate_plan

KNOWN = {"list_tasks", "search_notes", "create_task", "update_task"}
WRITES = {"create_task", "update_task"}


def step(
    n: int, who: str = "executor", deps: list[int] | None = None, tools: list[str] | None = None
) -> StepDraft:
    return StepDraft(
        step_number=n,
        description=f"step {n}",
        assignee=who,  # type: ignore[arg-type]
        depends_on=deps or [],
        tools=tools or [],
    )


def check(*steps: StepDraft) -> PlanDraft:
    return validate_plan(
        PlanDraft(goal="g", steps=list(steps)), known_tools=KNOWN, write_tools=WRITES
    )


def test_valid_plan_comes_back_in_step_order() -> None:
    plan = check(
        step(3, "planner", [1, 2], ["create_task"]), step(1, tools=["list_tasks"]), step(2)
    )
    assert [s.step_number for s in plan.steps] == [1, 2, 3]


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ((step(1), step(1)), "step 1 appears more than once"),
        ((step(1, deps=[4]),), "depends on step 4, which does not exist"),
        ((step(1, deps=[2]), step(2)), "depends on step 2, which is not an earlier step"),
        ((step(1, deps=[1]),), "which is not an earlier step"),
        ((step(1, deps=[2]), step(2, deps=[1])), "cycle"),
        ((step(1, tools=["drop_database"]),), "unknown tool 'drop_database'"),
        ((step(1, tools=["create_task"]),), "executors are read-only"),
    ],
)
def test_invalid_plans_are_refused(steps: tuple[StepDraft, ...], problem: str) -> None:
    with pytest.raises(InvalidPlan, match=problem):
        check(*steps)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(InvalidPlan) as caught:
        check(step(1, tools=["update_task"]), step(2, deps=[9]))
    assert len(caught.value.problems) == 2


def test_schema_limits() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PlanDraft(goal="g", steps=[])
    with pytest.raises(ValueError, match="at most 8"):
        PlanDraft(goal="g", steps=[step(n) for n in range(1, 10)])


def test_a_step_number_past_what_is_stored_is_refused_for_the_model_to_fix() -> None:
    with pytest.raises(InvalidPlan, match="number steps from 1 to 1000 at most"):
        check(step(1), step(2**63, deps=[1]))
    assert [s.step_number for s in check(step(10), step(1000, deps=[10])).steps] == [10, 1000]
