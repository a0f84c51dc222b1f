"""The structured calls agents steer the conversation with, instead of keywords in their text.

* `create_plan(goal, steps)` — the planner chooses the complex strategy (see `plan_schema`).
* `complete(result)` / `fail(reason)` / `escalate(reason)` — a step's agent ends its thread.
* `ask_planner(question)` — an executor asks the planner; the answer comes back as the result.

They are offered beside the domain tools but never reach the tool executor: the agent loops
recognise them by name and act on their validated arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
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
    CREATE_PLAN: "Plan a request that needs the user's data: executors (cheap, read-only) do "
    "the reads; you do every write (assignee planner). Steps without dependencies run in "
    "parallel; at most 8 steps.",
    COMPLETE: "End your step with its result: the facts the planner needs (ids, names, dates, "
    "numbers). Call it alone, after your tool results.",
    FAIL: "End your step: it cannot be done; say why.",
    ESCALATE: "End your step: only the user can decide or provide something; ask them.",
    ASK_PLANNER: "Ask the planner about something unclear in your step; the answer is this "
    "call's result.",
}
_MODELS: dict[str, type[BaseModel]] = {
    CREATE_PLAN: PlanDraft,
    COMPLETE: CompleteArgs,
    FAIL: FailArgs,
    ESCALATE: EscalateArgs,
    ASK_PLANNER: AskPlannerArgs,
}


def schema(name: str) -> ToolSchema:
    """The tool definition of one step control call (`create_plan` has its own), compact: its
    one text field, with the limits checked on arrival (`parse_control`) rather than spelled
    out on every call."""
    field = next(iter(_MODELS[name].model_fields))
    parameters = {
        "type": "object",
        "properties": {field: {"type": "string"}},
        "required": [field],
        "additionalProperties": False,
    }
    return ToolSchema(name, _DESCRIPTIONS[name], parameters)


def create_plan(tool_names: Sequence[str]) -> ToolSchema:
    """`create_plan`, naming the tools a step may list (all of them: executors get the read
    ones), so the planner needs no schema of a tool it only delegates."""
    # `function_parameters` is cached: edit a copy, never the cached schema.
    parameters: dict[str, Any] = copy.deepcopy(dict(function_parameters(PlanDraft)))
    step = parameters["properties"]["steps"]["items"]
    step["properties"]["tools"]["items"]["enum"] = list(tool_names)
    return ToolSchema(CREATE_PLAN, _DESCRIPTIONS[CREATE_PLAN], _lean(parameters))


_CHECKED_ON_ARRIVAL = frozenset(
    {"maxLength", "minLength", "minimum", "maxItems", "minItems", "default"}
)


def _lean(node: Any) -> Any:
    """The schema without the limits and defaults `read_plan` checks and applies on arrival
    (a plan that breaks one is answered with the problem); the descriptions say the defaults."""
    if isinstance(node, dict):
        return {k: _lean(v) for k, v in node.items() if k not in _CHECKED_ON_ARRIVAL}
    if isinstance(node, list):
        return [_lean(v) for v in node]
    return node


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
        problems = problem_list(
            [
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors(include_url=False, include_input=False)
            ]
        )
        return f"invalid arguments for {name}: {problems}"
    field = next(iter(model.model_fields))
    return ControlCall(name, str(getattr(value, field)))
