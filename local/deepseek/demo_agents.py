"""How the offline demo model plays Parley's agents (still canned, still labelled as the demo).

* Planner: offered `create_plan` and asked for several things ("plan my week: list my tasks
  and my calendar, then create a task"), it writes a plan — one step per clause that names a
  tool, reads for executors, writes for itself after the reads. A greeting gets a direct answer.
* Step agents (offered `complete`): they call the tool their step names, then `complete` with
  what the tools returned.

It knows Parley's control-call names (below), nothing else of the agent core.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

CREATE_PLAN = "create_plan"
COMPLETE = "complete"
CONTROL = frozenset({CREATE_PLAN, COMPLETE, "fail", "escalate", "ask_planner"})
GREETING = re.compile(
    r"^\W*(hello|hi|hey|good (morning|afternoon|evening)|thanks|thank you)\b", re.IGNORECASE
)
MULTI_STEP = re.compile(r"\b(plan|then|and then|after that|first)\b", re.IGNORECASE)
CLAUSES = re.compile(r"[,:;.]|\band then\b|\bthen\b|\band\b", re.IGNORECASE)
STEP_LINE = re.compile(r"^Your step: (.+)$", re.MULTILINE)
STEP_REPORT = re.compile(r"^Step (\d+): .*\n(?:Result|Problem): (.*)$", re.MULTILINE)
QUOTED = re.compile(r"[\"“']([^\"”']{3,80})[\"”']")


def is_greeting(text: str) -> bool:
    """A short hello or thanks: answered directly, whatever tools are offered."""
    return len(text.split()) <= 6 and GREETING.match(text) is not None


def offers(tools: Sequence[Mapping[str, Any]], name: str) -> bool:
    return any(tool.get("name") == name for tool in tools)


def domain_tools(tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The offered tools that are not Parley's control calls."""
    return [tool for tool in tools if tool.get("name") not in CONTROL]


def plannable(tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The tools a plan may use: those offered, and those `create_plan` lets a step name
    (the reads Parley's planner delegates without being shown their schemas)."""
    domain = domain_tools(tools)
    offered = {tool.get("name") for tool in domain}
    plan = next((tool for tool in tools if tool.get("name") == CREATE_PLAN), {})
    try:
        step = plan["parameters"]["properties"]["steps"]["items"]
        named = list(step["properties"]["tools"]["items"].get("enum", ()))
    except (KeyError, TypeError):
        named = []
    delegated = [{"name": n, "description": ""} for n in named if n not in offered]
    return [*delegated, *domain]  # ties go to reads: the words of a request name what it reads


def demo_plan(
    tools: Sequence[Mapping[str, Any]], text: str, best: Any, *, direct: Sequence[Any] = ()
) -> dict[str, Any] | None:
    """A `create_plan` argument for a multi-step request, or for one read the planner cannot
    make itself (a tool it may only name in a plan, not in `direct`); else None.

    `best(tools, clause)` picks the tool a clause names (the demo's word matching).
    """
    if not MULTI_STEP.search(text):
        tool = best(tools, text)
        if tool is None or tool in direct or changes_rows(tool):
            return None
        return {"goal": f"(demo) {text[:200]}", "steps": [_step(1, tool, "executor", [])]}
    picked: list[Mapping[str, Any]] = []
    for clause in CLAUSES.split(text):
        tool = best(tools, clause) if clause.strip() else None
        if tool is not None and tool not in picked:
            picked.append(tool)
    if len(picked) < 2:
        return None
    reads = [t for t in picked if not changes_rows(t)]
    steps = [_step(n, t, "executor", []) for n, t in enumerate(reads, start=1)]
    writes = [t for t in picked if changes_rows(t)]
    after = [s["step_number"] for s in steps]
    steps += [_step(len(steps) + n, t, "planner", after) for n, t in enumerate(writes, start=1)]
    return {"goal": f"(demo) {text[:200]}", "steps": steps}


def step_hint(text: str) -> str:
    """What a step agent's text fields should say: the quoted bit of its step, or the step."""
    found = STEP_LINE.search(text)
    line = found.group(1) if found else text
    quoted = QUOTED.search(line)
    return quoted.group(1) if quoted else line


def completion(results: Sequence[str]) -> dict[str, str]:
    """`complete`'s arguments: what the step's tools returned, briefly."""
    summary = "; ".join(_clip(result, 300) for result in results) or "nothing to look up"
    return {"result": f"(demo) Found: {summary}"}


def summary(results: Sequence[str]) -> str:
    """Tool results in a line or two each; a plan's step report as one line per step."""
    parts = []
    for result in results:
        steps = STEP_REPORT.findall(result)
        if steps:
            parts += [f"step {n}: {_clip(outcome, 160)}" for n, outcome in steps]
        else:
            parts.append(_clip(result, 200))
    return "; ".join(parts)


def changes_rows(tool: Mapping[str, Any]) -> bool:
    """Whether a tool changes rows (by its name: create_, update_, delete_, schedule_)."""
    name = str(tool.get("name", ""))
    return name.startswith(("create_", "update_", "delete_", "schedule_"))


def _step(number: int, tool: Mapping[str, Any], assignee: str, after: list[int]) -> dict[str, Any]:
    name = str(tool.get("name", ""))
    if assignee == "planner" and name.startswith("delete_"):
        description = f"Use {name} on the first one the earlier steps found."
    elif assignee == "planner":
        description = f'Use {name} for "Demo task from Parley", using the earlier results.'
    else:
        description = f"Use {name} and report what it returns."
    return {
        "step_number": number,
        "description": description,
        "assignee": assignee,
        "depends_on": after,
        "tools": [name],
    }


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
