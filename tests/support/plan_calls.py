"""Scripted plans the complex-turn tests share."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from local.deepseek import FakeModelServer, RecordedRequest, Reply, reply, tool_call
from tests.support.scripting import Script, delegation, kind_of, tool_results

TASKS_STEP = "List the user's open tasks"
CALENDAR_STEP = "Get the user's calendar events for this week"
WRITE_STEP = "Create a task titled Weekly review"

WEEK_PLAN: dict[str, Any] = {
    "goal": "Plan the user's week",
    "steps": [
        {
            "step_number": 1,
            "description": TASKS_STEP,
            "assignee": "executor",
            "tools": ["list_tasks"],
        },
        {
            "step_number": 2,
            "description": CALENDAR_STEP,
            "assignee": "executor",
            "tools": ["get_calendar_events"],
        },
        {
            "step_number": 3,
            "description": WRITE_STEP,
            "assignee": "planner",
            "depends_on": [1, 2],
            "tools": ["create_task"],
        },
    ],
}


def plan_call(plan: dict[str, Any] | None = None) -> Reply:
    return reply(tool_call("create_plan", **(plan or WEEK_PLAN)))


def complete_with_results(prefix: str) -> Any:
    """An executor turn that completes with what its tools returned (it saw its results)."""

    def answer(request: RecordedRequest) -> Reply:
        titles: list[str] = []
        for text in tool_results(request):
            try:
                found = json.loads(text) if text.startswith("{") else {}
            except ValueError:  # a result cut to fit the budget: the titles it still shows
                titles += re.findall(r'"title":"([^"]*)"', text)
                continue
            titles += [t["title"] for t in [*found.get("tasks", ()), *found.get("events", ())]]
        return reply(tool_call("complete", result=f"{prefix}: {', '.join(titles) or 'none'}"))

    return answer


def synthesis(request: RecordedRequest) -> Reply:
    """The final answer, built from the plan results the planner was given."""
    results = tool_results(request)[-1]
    lines = [
        line.removeprefix("Result: ")
        for line in results.splitlines()
        if line.startswith("Result: ")
    ]
    return reply("Your week. ", " | ".join(lines))


class Overlap:
    """Holds the first executor call until a call from another executor arrives: proof, without
    sleeping, that the two steps ran at the same time (a sequential run would never release)."""

    def __init__(self, fake: FakeModelServer) -> None:
        self.fake = fake
        self.lock = threading.Lock()
        self.first: str | None = None
        self.proven = False

    def hold(self, marker: str, item: Reply) -> Any:
        def respond(request: RecordedRequest) -> Reply:
            with self.lock:
                if self.first is None:
                    self.first = marker
                    return item.stalled(after=0)
                if marker != self.first and not self.proven:
                    self.proven = True
                    self.fake.release()
            return item

        return respond


def week_script(script: Script, fake: FakeModelServer, *, prove_overlap: bool = True) -> Overlap:
    """The full week plan: two parallel executors (one asks a question), a planner write.

    `prove_overlap`: the first executor call is held until the other step's first call arrives
    (leave it off where steps run one after the other, e.g. one queue message at a time)."""
    overlap = Overlap(fake)
    held = overlap.hold if prove_overlap else (lambda marker, item: item)
    script.planner(plan_call(), synthesis)
    script.step(
        TASKS_STEP,
        held(TASKS_STEP, reply(tool_call("list_tasks", status=["backlog"]))),
        reply(tool_call("ask_planner", question="Should done tasks count?")),
        complete_with_results("Open tasks"),
    )
    script.step(
        CALENDAR_STEP,
        held(CALENDAR_STEP, reply(tool_call("get_calendar_events"))),
        complete_with_results("Events"),
    )
    script.answers(reply("No: only open tasks."))
    script.step(
        WRITE_STEP,
        reply(tool_call("create_task", title="Weekly review")),
        reply(tool_call("complete", result="Created the task Weekly review")),
        kind="planner_step",
    )
    return overlap


def is_executor(request: RecordedRequest, marker: str) -> bool:
    return kind_of(request) == "executor" and marker in delegation(request)
