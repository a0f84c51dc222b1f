"""The fake model's script for the economics benchmark: the same replies for both designs.

The model is played by rules, not by a queue, so each agent answers from what its own prompt
holds — an executor summarises exactly the items its tool results showed it, and the final
answer lists exactly the items the answering model was given. A design that drops data cannot
hide it: the items it lost are missing from what its answering model saw.

* Parley's planner (design A): the first call writes a plan with one executor step per
  lookup, leaving out what has a default (the goal when it is the message, step numbers,
  `assignee: executor`), with `answer: "executor"` unless the request needs judgement; the
  call that sees the plan's results answers (on whichever model the plan chose), giving each
  step's result as it stands with `{{step N}}` (its item lines read well for the user), as the
  prompt invites; Parley puts the results there.
* An executor: calls its step's tool; asks for the next page while a result offers one
  (`next_offset`); then completes with one line per item it saw.
* The single agent (design B): calls every lookup's tool in parallel, then answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from bench.requests import Request
from local.deepseek import RecordedRequest, Reply, ScriptItem, error, reply, tool_call
from shared.agents import prompts

ONE_AGENT = """You are a capable assistant for the user's projects, tasks, notes, brain dumps \
and calendar. Reply in the user's language, briefly and concretely. Use the tools to look \
things up or to change things; call independent tools in parallel. Never invent ids or data: \
look them up. Ask the user when a request is ambiguous."""
"""Design B's system prompt: Parley's planner prompt without the delegation."""

REASONING = (
    "The user wants these records. I will look at what the tools return, keep every item "
    "that matters, and answer with the facts only, in the order they were given."
)
"""What a call in thinking mode reasons (DeepSeek's V4 models think unless told not to)."""

STEP = re.compile(r"^Your step: (.+)$", re.MULTILINE)
STEP_RESULT = re.compile(r"^Step (\d+): completed\nResult: ", re.MULTILINE)
QUOTED = re.compile(r'"(?:title|name)":"((?:[^"\\]|\\.)*)"')
ITEM_FIELDS = ("status", "priority", "project_name", "start_at", "start_date", "active_task_count")


class BenchScript:
    """The fake's responder for every request of the benchmark."""

    def __init__(self, requests: Sequence[Request]) -> None:
        self.by_message = {request.message: request for request in requests}
        self.by_step = {lookup.description: lookup for r in requests for lookup in r.lookups}

    def __call__(self, recorded: RecordedRequest) -> ScriptItem:
        item = self._reply(recorded)
        thinking = recorded.body.get("thinking") or {}
        if isinstance(item, Reply) and thinking.get("type") != "disabled":
            return replace(item, reasoning=(REASONING,))
        return item

    def _reply(self, recorded: RecordedRequest) -> ScriptItem:
        messages = recorded.messages
        system = str(messages[0].get("content", "")) if messages else ""
        if system.startswith(ONE_AGENT[:60]):
            return self._one_agent(messages)
        if system.startswith(prompts.PLANNER[:60]):
            return self._planner(messages)
        if system.startswith(prompts.EXECUTOR[:60]):
            return self._executor(messages)
        return error(400, "the economics script has no reply for this request")

    def _request(self, messages: Sequence[Mapping[str, Any]]) -> Request:
        users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        return next(self.by_message[text] for text in reversed(users) if text in self.by_message)

    def _planner(self, messages: Sequence[Mapping[str, Any]]) -> Reply:
        results = _tool_results(messages)
        plan = next((r for r in results if r.startswith(prompts.PLAN_RESULTS[:40])), None)
        if plan is not None:
            found = STEP_RESULT.findall(plan)
            if not found:
                return reply(answer([]))
            return reply("Here is what I found:\n" + "\n".join(f"{{{{step {n}}}}}" for n in found))
        request = self._request(messages)
        steps = [
            {"description": lookup.description, "tools": [lookup.tool]}
            for lookup in request.lookups
        ]
        by = {} if request.judgement else {"answer": "executor"}
        return reply(tool_call("create_plan", steps=steps, **by))

    def _executor(self, messages: Sequence[Mapping[str, Any]]) -> Reply:
        delegation = next(str(m.get("content")) for m in messages if m.get("role") == "user")
        found = STEP.search(delegation)
        lookup = self.by_step[found.group(1).strip()] if found else None
        if lookup is None:
            return reply(tool_call("fail", reason="unknown step"))
        results = _tool_results(messages)
        if not results:
            return reply(tool_call(lookup.tool, **lookup.arguments))
        page = _next_offset(results[-1])
        if page is not None:
            return reply(tool_call(lookup.tool, **{**lookup.arguments, "offset": page}))
        lines = [_line(item) for text in results for item in items(text)]
        return reply(tool_call("complete", result="\n".join(lines) or "Nothing found."))

    def _one_agent(self, messages: Sequence[Mapping[str, Any]]) -> Reply:
        results = _tool_results(messages)
        if results:
            return reply(answer([_title(item) for text in results for item in items(text)]))
        request = self._request(messages)
        return reply(*(tool_call(lookup.tool, **lookup.arguments) for lookup in request.lookups))


def answer(titles: Sequence[str]) -> str:
    """The final answer: the same wording in both designs for the same items."""
    if not titles:
        return "I found nothing that matches."
    return "Here is what I found:\n" + "\n".join(f"- {title}" for title in titles)


def items(text: str) -> list[dict[str, Any]]:
    """The records a tool result shows (objects with a title or name, and free slots); a
    result that is not JSON (cut short) still shows the titles it holds."""
    try:
        payload = json.loads(text)
    except ValueError:
        return [{"title": json.loads(f'"{title}"')} for title in QUOTED.findall(text)]
    return list(_records(payload))


def _records(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if ("title" in value or "name" in value) and ("id" in value or "event_id" in value):
            yield value
        elif {"start_at", "end_at", "minutes"} <= value.keys():  # a free slot: an item too
            start, end = str(value["start_at"]), str(value["end_at"])
            yield {
                "title": f"Free {start[:10]} {start[11:16]}-{end[11:16]} ({value['minutes']} min)"
            }
        for child in value.values():
            yield from _records(child)
    elif isinstance(value, list):
        for child in value:
            yield from _records(child)


def _title(item: Mapping[str, Any]) -> str:
    return str(item.get("title") or item.get("name"))


def _line(item: Mapping[str, Any]) -> str:
    fields = [str(item[key])[:16] for key in ITEM_FIELDS if item.get(key) not in (None, "")]
    return " | ".join([f"- {_title(item)}", *fields])


def _tool_results(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


def _next_offset(text: str) -> int | None:
    try:
        payload = json.loads(text)
    except ValueError:
        return None
    offset = payload.get("next_offset") if isinstance(payload, dict) else None
    return offset if isinstance(offset, int) else None
