"""Scripting the fake model by who is asking and how far their conversation has got.

Requests from concurrent agents arrive in any order, so replies are not queued: each request is
recognised by its system prompt (planner, planner step, planner answering a question, executor)
and, for steps, by a marker in its delegation; the reply is picked by the number of assistant
turns already in its history. A request nothing was scripted for gets an HTTP 400, which fails
the turn visibly.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from local.deepseek import FakeModelServer, RecordedRequest, ScriptItem, error
from shared.agents import prompts

Replier = ScriptItem | Callable[[RecordedRequest], ScriptItem]

KINDS = {
    "planner": prompts.PLANNER[:40],
    "planner_step": prompts.PLANNER_STEP[:40],
    "answer": prompts.ANSWER[:40],
    "executor": prompts.EXECUTOR[:40],
}


def kind_of(request: RecordedRequest) -> str:
    """Which agent (and which role of it) sent the request."""
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    for kind, prefix in KINDS.items():
        if system.startswith(prefix):
            return kind
    return "unknown"


def delegation(request: RecordedRequest) -> str:
    """A step agent's task (its first user message)."""
    return next((str(m.get("content")) for m in request.messages if m.get("role") == "user"), "")


def turn_index(request: RecordedRequest) -> int:
    """Assistant turns since the last real user message: 0 for the first call of a turn."""
    messages = request.messages
    last_user = max(
        (
            i
            for i, m in enumerate(messages)
            if m.get("role") == "user" and not str(m.get("content", "")).startswith("Reminder:")
        ),
        default=-1,
    )
    if kind_of(request) in ("executor", "planner_step"):
        last_user = next(i for i, m in enumerate(messages) if m.get("role") == "user")
    return sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant")


def tool_results(request: RecordedRequest) -> list[str]:
    """The contents of every tool message in the request."""
    return [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]


class Script:
    """Replies by agent kind (and step marker), turn by turn. Use as the fake's responder."""

    def __init__(self, fake: FakeModelServer) -> None:
        self.fake = fake
        self._rules: list[tuple[str, str | None, list[Replier]]] = []
        self.unscripted: list[RecordedRequest] = []
        self.lock = threading.Lock()
        fake.respond_with(self)

    def planner(self, *replies: Replier) -> Script:
        """The planner's routing/tool/synthesis calls, in order."""
        self._rules.append(("planner", None, list(replies)))
        return self

    def step(self, marker: str, *replies: Replier, kind: str = "executor") -> Script:
        """The calls of the agent whose delegation contains `marker`."""
        self._rules.append((kind, marker, list(replies)))
        return self

    def answers(self, *replies: Replier) -> Script:
        """The planner's answers to executors' questions, in order of asking."""
        self._rules.append(("answer", None, list(replies)))
        return self

    def __call__(self, request: RecordedRequest) -> ScriptItem:
        kind = kind_of(request)
        index = self._answer_index() if kind == "answer" else turn_index(request)
        for rule_kind, marker, replies in self._rules:
            mine = rule_kind == kind and (marker is None or marker in delegation(request))
            if mine and index < len(replies):
                chosen = replies[index]
                return chosen(request) if callable(chosen) else chosen
        with self.lock:
            self.unscripted.append(request)
        return error(400, f"unscripted request ({kind}, turn {index})")

    def _answer_index(self) -> int:
        asked = [r for r in self.fake.requests if kind_of(r) == "answer"]
        return len(asked) - 1


def requests_of(
    fake: FakeModelServer, kind: str, marker: str | None = None
) -> list[RecordedRequest]:
    """The recorded requests of one agent kind (and step marker)."""
    return [
        r
        for r in fake.requests
        if kind_of(r) == kind and (marker is None or marker in delegation(r))
    ]


def arguments(request: RecordedRequest, index: int = -1) -> dict[str, Any]:
    """The arguments of the last tool call in the request's `index`-th assistant message."""
    assistants = [m for m in request.messages if m.get("role") == "assistant"]
    calls = assistants[index].get("tool_calls") or []
    return dict(json.loads(calls[-1]["function"]["arguments"]))
