"""`python3 dev.py check-model`: each kind of request Parley makes, sent to the configured model.

With `DEEPSEEK_API_KEY` (or `LLM_BASE_URL` + `LLM_API_KEY`) it talks to that endpoint; without
a key, to DeepSeek's local twin (`local.deepseek`), as CI does. The requests are built from
Parley's own prompts, tools and thinking settings (`shared.agents`), for the configured models:
routing, a plan step's forced tool call for each role in each thinking mode, a step's next turn
and a later message passing reasoning back, the final answer, an answer to an executor's
question — about a dozen small calls. It prints a verdict per request kind, what they cost, and
for a refusal the rule DeepSeek applied (docs/deepseek.md) and the setting that fixes it.
Exit status: 0 when every request passed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from uuid import uuid4

from local.deepseek import FakeModelServer
from local.deepseek.contract import rule_named
from shared.agents import control_tools, prompts
from shared.agents.model_calls import forced_choice, requested_thinking, tool_schemas
from shared.agents.planner.planner_loop import routing_tools
from shared.db.records import Agent
from shared.kernel.settings import Settings
from shared.llm import (
    AssistantMessage,
    ChatRequest,
    Completion,
    LLMError,
    Message,
    OpenAIClient,
    RetryPolicy,
    SystemMessage,
    ToolMessage,
    ToolSchema,
    UserMessage,
)
from shared.llm.openai_client import DEFAULT_BASE_URL
from shared.services import load_settings
from shared.tools import builtin_registry

MODES = ("auto", "enabled", "disabled")
ASK = "Plan my week: list my open tasks, then create a task called 'Check the model'."
FIXES = {
    "tool-choice-thinking": "LLM_{ROLE}_THINKING=disabled (or a Parley that sends `auto` while "
    "thinking)",
    "reasoning-passback": "LLM_{ROLE}_THINKING=disabled (or a Parley that passes reasoning back)",
    "unknown-model": "LLM_{ROLE}_MODEL: a model the endpoint serves",
    "max-tokens": "PLANNER_TOKEN_BUDGET / EXECUTOR_TOKEN_BUDGET",
    "context-length": "PLANNER_TOKEN_BUDGET / EXECUTOR_TOKEN_BUDGET",
    "401": "DEEPSEEK_API_KEY (or LLM_API_KEY): the key is wrong or revoked",
    "402": "top up the account of the key in DEEPSEEK_API_KEY / LLM_API_KEY",
}


@dataclass(slots=True)
class Verdict:
    """One request kind: what was sent, and what came back."""

    kind: str
    passed: bool
    detail: str
    rule: str | None = None
    fix: str | None = None
    cost: Decimal = Decimal(0)


@dataclass(slots=True)
class Checker:
    """Sends Parley's requests through Parley's client; keeps the verdicts and the spend."""

    client: OpenAIClient
    settings: Settings
    max_usd: Decimal
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def spent(self) -> Decimal:
        return sum((v.cost for v in self.verdicts), Decimal(0))

    async def send(self, kind: str, role: str, request: ChatRequest) -> Completion | None:
        if self.spent >= self.max_usd:
            self.verdicts.append(Verdict(kind, False, f"not sent: the cap of ${self.max_usd}"))
            return None
        try:
            done = await self.client.complete(request)
        except LLMError as exc:
            rule = rule_of(exc)
            fix = FIXES.get(rule or "", "").replace("{ROLE}", role.upper()) or None
            self.verdicts.append(Verdict(kind, False, str(exc), rule, fix))
            return None
        self.verdicts.append(Verdict(kind, True, describe(done), cost=done.usage.cost_usd))
        return done

    def thinking(self, role: str, model: str, mode: str | None = None) -> bool | None:
        settings = self.settings
        if mode is not None:
            settings = settings.model_copy(update={f"llm_{role}_thinking": mode})
        return requested_thinking(settings, role, self.client.registry.lookup(model))

    def thinks(self, model: str, requested: bool | None) -> bool:
        return self.client.registry.lookup(model).thinking if requested is None else requested


def rule_of(exc: LLMError) -> str | None:
    """Which of DeepSeek's rules (docs/deepseek.md) a refusal names, by its words."""
    if exc.status_code in (401, 402):
        return str(exc.status_code)
    return rule_named(str(exc))


def describe(done: Completion) -> str:
    calls = ", ".join(call.name for call in done.tool_calls) or "none"
    tokens = done.tokens
    cache = "reported" if tokens.cache_miss_tokens is not None else "not reported"
    reasoning = "with reasoning" if done.message.reasoning_content else "no reasoning"
    return (
        f"{tokens.prompt_tokens} in / {tokens.completion_tokens} out, cache hits "
        f"{tokens.cache_hit_tokens} ({cache}), {reasoning}; tool calls: {calls}"
    )


def planner_agent(settings: Settings) -> Agent:
    """The planner's row as Parley makes it (in memory: only its permissions are read)."""
    now = datetime.now(UTC)
    return Agent(
        id=uuid4(),
        user_id=uuid4(),
        chat_session_id=uuid4(),
        parent_agent_id=None,
        role="planner",
        name="planner",
        model=settings.llm_planner_model,
        permissions="read_write",
        allowed_tools=None,
        token_budget=settings.planner_token_budget,
        prompt_id=None,
        status="active",
        created_at=now,
        completed_at=None,
    )


async def check_all(checker: Checker) -> None:
    settings = checker.settings
    planner, executor = settings.llm_planner_model, settings.llm_executor_model
    registry = builtin_registry()
    routing = routing_tools(planner_agent(settings), registry)
    system = SystemMessage(prompts.with_date(prompts.PLANNER))
    wanted = checker.thinking("planner", planner)
    asked: list[Message] = [system, UserMessage(ASK)]
    request = ChatRequest(planner, asked, tools=routing, thinking=wanted)
    routed = await checker.send("routing, streamed (planner)", "planner", request)
    steps: dict[str, Completion | None] = {}
    for role, model, tool in (
        ("planner", planner, "create_task"),
        ("executor", executor, "list_tasks"),
    ):
        for mode in MODES:
            steps[f"{role}:{mode}"] = await step_turn(checker, registry, role, model, tool, mode)
    await next_turns(checker, routed, steps.get(f"planner:{settings.llm_planner_thinking}"))
    await answers(checker, routing, routed)


async def step_turn(
    checker: Checker, registry: object, role: str, model: str, tool: str, mode: str
) -> Completion | None:
    """A plan step's first turn: the call every turn must end in, forced as Parley forces it."""
    wanted = checker.thinking(role, model, mode)
    request = step_request(checker, role, model, tool, wanted, [])
    return await checker.send(f"{role} step, thinking {mode}", role, request)


def step_request(
    checker: Checker,
    role: str,
    model: str,
    tool: str,
    wanted: bool | None,
    turns: Sequence[Message],
) -> ChatRequest:
    executor = role == "executor"
    definitions = [d for d in builtin_registry().definitions() if d.name == tool]
    tools: list[ToolSchema] = control_tools.step_tools(can_ask=executor)
    tools += tool_schemas(definitions)
    prompt = prompts.EXECUTOR if executor else prompts.PLANNER_STEP
    task = f"Your step: use {tool} for the user's request: {ASK}"
    messages = [SystemMessage(prompts.with_date(prompt)), UserMessage(task), *turns]
    choice = forced_choice(thinks=checker.thinks(model, wanted))
    return ChatRequest(
        model, messages, tools=tuple(tools), tool_choice=choice, thinking=wanted, stream=False
    )


async def next_turns(checker: Checker, routed: Completion | None, first: Completion | None) -> None:
    """The planner's step's second turn (its first turn's reasoning and calls passed back with
    their results), and a later message of the session (the first answer's reasoning back)."""
    settings = checker.settings
    model = settings.llm_planner_model
    if first is not None and first.tool_calls:
        calls, reasoning = first.tool_calls, first.message.reasoning_content
        turn: list[Message] = [AssistantMessage(first.text or None, calls, reasoning)]
        turn += [
            ToolMessage.answering(call, '{"id": "t1", "title": "Check the model"}')
            for call in calls
        ]
        wanted = checker.thinking("planner", model)
        request = step_request(checker, "planner", model, "create_task", wanted, turn)
        await checker.send("planner step, next turn (reasoning passed back)", "planner", request)
    planner = settings.llm_planner_model
    reasoning = routed.message.reasoning_content if routed is not None else None
    answer = AssistantMessage("You have no open tasks.", reasoning_content=reasoning)
    system = SystemMessage(prompts.with_date(prompts.PLANNER))
    later: list[Message] = [system, UserMessage(ASK), answer, UserMessage("And next week?")]
    routing = routing_tools(planner_agent(settings), builtin_registry())
    wanted = checker.thinking("planner", planner)
    request = ChatRequest(planner, later, tools=routing, thinking=wanted)
    await checker.send("a later message (past answer's reasoning passed back)", "planner", request)


async def answers(checker: Checker, routing: list[ToolSchema], routed: Completion | None) -> None:
    """The final answer (streamed, no tools) and the planner's answer to a question."""
    settings = checker.settings
    planner = settings.llm_planner_model
    wanted = checker.thinking("planner", planner)
    plan_turn: list[Message] = [UserMessage(ASK)]
    if routed is not None and routed.tool_calls:
        calls, reasoning = routed.tool_calls, routed.message.reasoning_content
        plan_turn.append(AssistantMessage(routed.text or None, calls, reasoning))
        results = f"{prompts.PLAN_RESULTS}\nStep 1: completed\nResult: no open tasks."
        plan_turn += [ToolMessage.answering(call, results) for call in calls]
    system = SystemMessage(prompts.with_date(prompts.PLANNER))
    await checker.send(
        "final answer, streamed (no tools)",
        "planner",
        ChatRequest(planner, [system, *plan_turn], thinking=wanted),
    )
    question = UserMessage(f"The user's request: {ASK}\n\nThe executor asks: which week?")
    answer: list[Message] = [SystemMessage(prompts.with_date(prompts.ANSWER)), question]
    await checker.send(
        "answer to an executor's question",
        "planner",
        ChatRequest(planner, answer, thinking=wanted, stream=False),
    )


def table(verdicts: Sequence[Verdict], endpoint: str, spent: Decimal) -> str:
    width = max(len(v.kind) for v in verdicts)
    lines = [f"Parley's requests against {endpoint}", ""]
    for v in verdicts:
        lines.append(f"  {'PASS' if v.passed else 'FAIL'}  {v.kind:<{width}}  {v.detail}")
        if v.rule or v.fix:
            lines.append(
                f"        {'':<{width}}  rule: {v.rule or '?'} (docs/deepseek.md)"
                + (f"; fix: {v.fix}" if v.fix else "")
            )
    passed = sum(v.passed for v in verdicts)
    lines += ["", f"{passed}/{len(verdicts)} passed; spent ${spent:.6f} (priced by the registry)"]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    settings = load_settings()
    keyless = settings.llm_api_key is None and settings.llm_base_url == DEFAULT_BASE_URL
    twin = FakeModelServer().start() if keyless else None
    try:
        if twin is not None:
            settings = settings.model_copy(update={"llm_base_url": twin.base_url})
        client = OpenAIClient.from_settings(settings)
        client.retry = RetryPolicy(max_retries=0)  # a refusal is the verdict: never retried
        checker = Checker(client, settings, Decimal(str(args.max_usd)))
        async with client:
            await check_all(checker)
        endpoint = "DeepSeek's local twin (no key set)" if twin else client.base_url
        print(table(checker.verdicts, endpoint, checker.spent))
        return 0 if all(v.passed for v in checker.verdicts) else 1
    finally:
        if twin is not None:
            twin.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-usd",
        type=float,
        default=0.10,
        help="stop sending once this much is spent (default 0.10)",
    )
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
