"""Parley's offline demo model: what the fake server says when nothing is scripted.

It never pretends to be a real model. It calls a tool when one is forced, required, or plainly
relevant to the user's words (arguments made from the tool's JSON Schema), summarises tool
results when they come back, and otherwise explains how to configure a real model. Playing
Parley's agents, it writes plans for multi-step requests and ends steps with `complete`
(`demo_agents`), so the local stack runs a whole complex turn offline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from local.deepseek import demo_agents as agents
from local.deepseek.script import RecordedRequest, Reply, ScriptedCall, reply

DEMO_MODEL = "parley-demo"
DEMO_MODELS = (DEMO_MODEL,)
"""The demo's names. It behaves as DeepSeek V4 does: it thinks unless told not to."""
NOTICE = (
    "I am Parley's offline demo model (parley-demo), not a real LLM: my replies are canned. "
    "To use a real model set DEEPSEEK_API_KEY, or LLM_BASE_URL and LLM_API_KEY for any "
    "OpenAI-compatible server (OpenAI, Ollama, vLLM, OpenRouter)."
)
NIL_ID = "00000000-0000-4000-8000-000000000000"
"""The id a demo read uses when the conversation names none (the tool answers "not found"); a
demo write with no id to use is not made (`_nothing_to_act_on`)."""
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_TEXT_FIELDS = ("query", "q", "text", "title", "content", "description", "goal", "name", "task")


def demo_reply(request: RecordedRequest) -> Reply:
    """The demo model's reply to a chat-completions request."""
    messages = request.messages
    last = messages[-1] if messages else {}
    user_text = _last_user_text(messages)
    reasoning = f"The user wrote: {user_text[:120]!r}."  # sent only in thinking mode
    tools = _offered(request)
    if last.get("role") == "user" and (plan := _plan(request, tools, user_text)) is not None:
        call = ScriptedCall(agents.CREATE_PLAN, json.dumps(plan))
        return reply("(demo) Writing a plan.", call, reasoning=reasoning)
    tool = _tool_to_call(request, user_text) if last.get("role") == "user" else None
    if tool is not None:
        call = _demo_call(tool, agents.step_hint(user_text), _conversation_text(messages))
        if NIL_ID in call.arguments_json and agents.changes_rows(tool):
            return _nothing_to_act_on(call, tools, reasoning)
        return reply(f"(demo) Calling {call.name}.", call, reasoning=reasoning)
    results = [
        str(m.get("content", ""))
        for m in messages[_last_turn_start(messages) :]
        if m.get("role") == "tool"
    ]
    if agents.offers(tools, agents.COMPLETE) and request.body.get("tool_choice") != "none":
        done = ScriptedCall(agents.COMPLETE, json.dumps(agents.completion(results)))
        return reply(done, reasoning=reasoning)
    if last.get("role") == "tool":
        summary = agents.summary(results)
        return reply(f"(demo) The tools returned: {summary}\n\n{NOTICE}", reasoning=reasoning)
    echo = f'You wrote: "{_clip(user_text, 200)}"\n\n' if user_text else ""
    return reply(f"{echo}{NOTICE}", reasoning=reasoning)


def _nothing_to_act_on(
    call: ScriptedCall, tools: Sequence[Mapping[str, Any]], reasoning: str
) -> Reply:
    """A write the conversation gives no row for (an empty account: no event to delete) is not
    called on a made-up id: the demo says so instead (as a step's result when it plays one)."""
    said = (
        f"(demo) Nothing for {call.name} to act on: no earlier result names a row for it (this "
        "account has none yet). The demo user has demo data; on the local stack a new account "
        "gets the same when it signs up."
    )
    if agents.offers(tools, agents.COMPLETE):
        return reply(
            ScriptedCall(agents.COMPLETE, json.dumps({"result": said})), reasoning=reasoning
        )
    return reply(said, reasoning=reasoning)


def _offered(request: RecordedRequest) -> list[Mapping[str, Any]]:
    return [t["function"] for t in request.body.get("tools") or () if isinstance(t, dict)]


def _plan(
    request: RecordedRequest, tools: list[Mapping[str, Any]], user_text: str
) -> dict[str, Any] | None:
    if request.body.get("tool_choice", "auto") != "auto" or not agents.offers(
        tools, agents.CREATE_PLAN
    ):
        return None
    return agents.demo_plan(
        agents.plannable(tools), user_text, _best_tool, direct=agents.domain_tools(tools)
    )


def _tool_to_call(request: RecordedRequest, user_text: str) -> Mapping[str, Any] | None:
    tools = _offered(request)
    choice = request.body.get("tool_choice", "auto")
    if not tools or choice == "none":
        return None
    if isinstance(choice, dict):
        wanted = choice.get("function", {}).get("name")
        return next((t for t in tools if t.get("name") == wanted), None)
    if agents.is_greeting(user_text):
        return None
    domain = agents.domain_tools(tools)
    if agents.offers(tools, agents.COMPLETE):  # a step agent: match its step, not its goal
        user_text = agents.step_hint(user_text)
    best = _best_tool(domain, user_text)
    if best is None and choice == "required" and domain:
        return domain[0]
    return best


def _best_tool(tools: Sequence[Mapping[str, Any]], text: str) -> Mapping[str, Any] | None:
    """The tool whose name and description share the most words with `text` (None: none)."""
    words = set(re.findall(r"[a-z]{3,}", text.lower()))
    scored = [(len(words & _words_of(tool)), i, tool) for i, tool in enumerate(tools)]
    if not scored:
        return None
    best_score, _, best = max(scored, key=lambda s: (s[0], -s[1]))
    return best if best_score else None


def _words_of(tool: Mapping[str, Any]) -> set[str]:
    text = f"{tool.get('name', '')} {tool.get('description', '')}".replace("_", " ").lower()
    return set(re.findall(r"[a-z]{3,}", text)) - {"the", "and", "for", "with", "from", "this"}


def _demo_call(tool: Mapping[str, Any], user_text: str, seen: str) -> ScriptedCall:
    arguments = example_value(tool.get("parameters") or {}, hint=user_text, key="", seen=seen)
    return ScriptedCall(str(tool.get("name", "")), json.dumps(arguments))


def example_value(schema: Mapping[str, Any], *, hint: str, key: str, seen: str = "") -> Any:
    """A plausible value satisfying a (simple) JSON Schema: required fields, enums, formats.

    An id field (`format: uuid`) takes the first id of that name in `seen` (the conversation:
    earlier tool results), so a demo write acts on a row an earlier step found.
    """
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for union in ("anyOf", "oneOf"):
        if options := [s for s in schema.get(union, ()) if s.get("type") != "null"]:
            return example_value(options[0], hint=hint, key=key)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        properties: Mapping[str, Any] = schema.get("properties", {})
        return {
            name: example_value(properties[name], hint=hint, key=name, seen=seen)
            for name in schema.get("required", ())
            if name in properties
        }
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        item = schema.get("items", {})
        return [example_value(item, hint=hint, key=key, seen=seen) for _ in range(count)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return _example_string(schema, hint=hint, key=key, seen=seen)


def _example_string(schema: Mapping[str, Any], *, hint: str, key: str, seen: str) -> str:
    fmt = schema.get("format")
    if fmt == "uuid":
        found = re.search(rf'"{re.escape(key)}"\s*:\s*"({_UUID})"', seen) if key else None
        return found.group(1) if found else NIL_ID
    if fmt == "date-time":
        return datetime.now(UTC).replace(microsecond=0).isoformat()
    if fmt == "date":
        return datetime.now(UTC).date().isoformat()
    if key in _TEXT_FIELDS and hint:
        return _clip(hint, int(schema.get("maxLength", 200)))
    return f"demo {key}".strip()


def _conversation_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _last_turn_start(messages: list[dict[str, Any]]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") != "tool":
            return index
    return 0


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
