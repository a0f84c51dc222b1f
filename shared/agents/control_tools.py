"""The structured calls agents steer the conversation with, instead of keywords in their text.

* `create_plan(goal, steps)` — the planner chooses the complex strategy (see `plan_schema`).
* `complete(result)` / `fail(reason)` / `escalate(reason)` — a step's agent ends its thread.
* `ask_planner(question)` — an executor asks the planner; the answer comes back as the result.

They are offered beside the domain tools but never reach the tool executor: the agent loops
recognise them by name and act on their validated arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.agents.plan_schema import PlanDraft
from shared.llm import ToolSchema
from shared.tools.results import problem_list
from shared.tools.schema import function_parameters

CREATE_PLAN = "create_plan"
COMPLETE = "complete"
FAIL = "fail"
ESCALATE = "escalate"
ASK_PLANNER = "ask_planner"

Ending = Literal["complete", "fail", "escalate"]
ENDINGS: frozenset[str] = frozenset({COMPLETE, FAIL, ESCALATE})
CONTROL_NAMES: frozenset[str] = ENDINGS | {ASK_PLANNER, CREATE_PLAN}


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompleteArgs(_Args):
    result: str = Field(
        min_length=1,
        max_length=32_000,
        description="What you found, self-contained: the facts the planner needs (ids, names, "
        "dates, numbers), not how you found them.",
    )


class FailArgs(_Args):
    reason: str = Field(min_length=1, max_length=2000, description="Why the step cannot be done.")


class EscalateArgs(_Args):
    reason: str = Field(
        min_length=1,
        max_length=2000,
        description="What only the user can decide or provide, as a question to them.",
    )


class AskPlannerArgs(_Args):
    question: str = Field(min_length=1, max_length=2000, description="One clear question.")


_DESCRIPTIONS = {
    CREATE_PLAN: "Write a plan for a request that needs several steps or several tools. Give "
    "read-only lookups to executors (list the read tools each needs) and do every write "
    "yourself (assignee `planner`). Steps without dependencies run in parallel.",
    COMPLETE: "Finish your step and report its result. Call it alone, after you have seen the "
    "results of your tool calls.",
    FAIL: "Give up on your step because it cannot be done; say why.",
    ESCALATE: "Stop because only the user can decide or provide something; say what.",
    ASK_PLANNER: "Ask the planner a question about your step when something is unclear; its "
    "answer comes back as this call's result.",
}
_MODELS: dict[str, type[BaseModel]] = {
    CREATE_PLAN: PlanDraft,
    COMPLETE: CompleteArgs,
    FAIL: FailArgs,
    ESCALATE: EscalateArgs,
    ASK_PLANNER: AskPlannerArgs,
}


def schema(name: str) -> ToolSchema:
    """The tool definition of one control call."""
    return ToolSchema(name, _DESCRIPTIONS[name], function_parameters(_MODELS[name]))


def step_tools(*, can_ask: bool) -> list[ToolSchema]:
    """The control calls of a step's agent (executors may also ask the planner)."""
    names = [COMPLETE, FAIL, ESCALATE] + ([ASK_PLANNER] if can_ask else [])
    return [schema(name) for name in names]


@dataclass(frozen=True, slots=True)
class ControlCall:
    """A validated control call: its kind and its single text argument."""

    name: str
    text: str


def parse_control(name: str, arguments: Mapping[str, Any]) -> ControlCall | str:
    """The call, or the problem with its arguments (told to the model as the call's result)."""
    model = _MODELS[name]
    try:
        value = model.model_validate(dict(arguments))
    except ValidationError as exc:
        problems = problem_list([
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)
        ])  # fmt: skip
        return f"invalid arguments for {name}: {problems}"
    field = next(iter(model.model_fields))
    return ControlCall(name, str(getattr(value, field)))
