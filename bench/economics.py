"""Benchmark: does delegating pay? Parley's planner→executors against one agent doing it all.

    .venv/bin/python -m bench.economics [--executor-budget N]

A seeded account of realistic size (`bench.account`: 12 projects, 60 tasks, 24 events, 20
notes, 8 brain dumps) and scripted complex requests (`bench.requests`) are run two ways over
the same fake-model script of replies (`bench.replies`):

* A — Parley: the planner (`LLM_PLANNER_MODEL`, deepseek-v4-pro) writes a plan, executors
  (`LLM_EXECUTOR_MODEL`, deepseek-flash) do the reads, the planner answers from their results;
  Parley's defaults throughout (budgets, thinking, tools offered).
* B — one agent on the planner's model, offered every tool, calling the same read tools
  itself (in parallel, one round) and answering from their raw results.

Tokens are what the fake reports: prompt tokens by DeepSeek's tokenizer, cache hits as
DeepSeek's disk cache would count them (requests run in order, A's steps one at a time, so the
cache evolves deterministically). Costs use the shipped registry (`shared/llm/models.toml`) at a
peak and an off-peak hour, with those cache hits ("cache") and with every prompt token a miss
("no cache"). Completeness is the share of the items a request asks about that appear in what
the answering model was given — a design that drops data cannot win on cost; the totals also
count them in the answers the users got (A's with `{{step N}}` expanded).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import uuid4

from bench import account as seeded
from bench.replies import ONE_AGENT, BenchScript
from bench.requests import Request, requests
from local.deepseek import Exchange, FakeModelServer
from shared.agents import prompts, run_turn
from shared.agents.model_calls import tool_schemas
from shared.db import Database, agents, chats, users
from shared.llm import (
    AssistantMessage,
    ChatRequest,
    Message,
    ModelInfo,
    OpenAIClient,
    Price,
    RetryPolicy,
    SystemMessage,
    ToolMessage,
    UserMessage,
    load_registry,
)
from shared.llm.tokens import DeepSeekTokenizer, count_tools
from shared.services import Services
from shared.settings import Settings
from shared.tools import CallContext, ToolExecutor, TurnCache, builtin_registry, offered_tools
from shared.tools import ToolCall as ExecutorCall
from tests import databases
from tests.events.in_memory import InMemoryPublisher

PLANNER = "deepseek-v4-pro"
EXECUTOR = "deepseek-flash"
PEAK = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)  # a Monday, 10:00 in Beijing
OFF_PEAK = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # a Saturday
MILLION = Decimal(1_000_000)


@dataclass(slots=True)
class Tally:
    """Tokens and costs of some model calls."""

    calls: int = 0
    prompt: int = 0
    hit: int = 0
    output: int = 0
    schemas: int = 0
    cost: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))

    def add(self, other: Tally) -> None:
        self.calls += other.calls
        self.prompt += other.prompt
        self.hit += other.hit
        self.output += other.output
        self.schemas += other.schemas
        for key, value in other.cost.items():
            self.cost[key] += value


@dataclass(slots=True)
class Run:
    """One request under one design: tallies per model, and how complete the answer's basis was."""

    by_model: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    expected: int = 0
    seen: int = 0
    answered: int = 0
    """Expected items in the answer the user got (A: with `{{step N}}` expanded)."""
    largest_executor_prompt: int = 0

    @property
    def total(self) -> Tally:
        total = Tally()
        for tally in self.by_model.values():
            total.add(tally)
        return total


COSTS = ("peak/cache", "peak/no cache", "off-peak/cache", "off-peak/no cache")


def price_at(info: ModelInfo, when: datetime) -> Price:
    """The model's price per 1M tokens for a call finishing at `when` (the registry's rates)."""
    price = info.price_at(when)
    assert price is not None, f"{info.name} has no price in the registry"
    return price


def tally(exchanges: Sequence[Exchange], registry: Any, tokenizer: DeepSeekTokenizer) -> Run:
    run = Run()
    for exchange in exchanges:
        usage = exchange.usage
        if usage is None:
            continue
        info = registry.lookup(exchange.request.model)
        t = run.by_model[exchange.request.model]
        t.calls += 1
        t.prompt += usage.prompt_tokens
        t.hit += usage.cache_hit_tokens
        t.output += usage.completion_tokens
        tools = [x for x in exchange.request.body.get("tools") or () if isinstance(x, dict)]
        t.schemas += count_tools(tokenizer, tools)
        for when, label in ((PEAK, "peak"), (OFF_PEAK, "off-peak")):
            price = price_at(info, when)
            for hits, kind in ((usage.cache_hit_tokens, "cache"), (0, "no cache")):
                misses = usage.prompt_tokens - hits
                cost = (hits * price.cache_hit + misses * price.cache_miss
                        + usage.completion_tokens * price.output) / MILLION  # fmt: skip
                t.cost[f"{label}/{kind}"] += cost
    return run


def completeness(run: Run, answering: Exchange | None, expected: set[str]) -> None:
    """Count the expected items that appear in what the answering model was given."""
    text = ""
    if answering is not None:
        text = "\n".join(str(m.get("content") or "") for m in answering.request.messages)
    run.expected = len(expected)
    run.seen = _items_in(text, expected)


def shown(title: str, text: str) -> bool:
    """Whether `text` shows the item titled `title` as an item: a record's `title`/`name` in a
    tool result (B), or an item line ("- title | …") of an executor's result (A; the first one
    follows "Result: " in the plan's results). A bare substring would not do:
    "Standup #1" is inside "Standup #17", a project's name inside its notes' titles."""
    quoted = re.escape(json.dumps(title, ensure_ascii=False)[1:-1])
    pattern = rf'(?:^|\s)- {re.escape(title)}(?: \||$)|"(?:title|name)": ?"{quoted}"'
    return re.search(pattern, text, re.MULTILINE) is not None


class Bench:
    """The database, the account, the fake model and both designs."""

    def __init__(
        self, db: Database, url: str, fake: FakeModelServer, overrides: dict[str, Any]
    ) -> None:
        self.db, self.url, self.fake, self.overrides = db, url, fake, overrides
        self.tokenizer = DeepSeekTokenizer()
        self.registry = load_registry()
        self.client = OpenAIClient(base_url=fake.base_url, api_key=None,
                                   retry=RetryPolicy(max_retries=0))  # fmt: skip
        self.user = uuid4()

    async def seed(self) -> list[Request]:
        async with self.db.service() as conn:
            await users.ensure_user(conn, user_id=self.user, email=f"{self.user}@bench.local")
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        account = await seeded.seed(self.db, self.user, today)
        self.account = account
        return requests(account)

    def services(self) -> Services:
        settings = Settings(
            database_url=self.url, llm_base_url=self.fake.base_url,
            llm_planner_model=PLANNER, llm_executor_model=EXECUTOR,
            executor_concurrency=1, llm_max_retries=0, approvals="off", **self.overrides,
        )  # fmt: skip
        return Services(settings, db=self.db, llm=self.client, tokens=self.tokenizer)

    async def parley(self, request: Request) -> Run:
        start = len(self.fake.exchanges)
        outcome = await run_turn(
            self.services(), user_id=self.user, session_id=None, message=request.message,
            publisher=InMemoryPublisher(),
        )  # fmt: skip
        if outcome.plan.answer is None:
            raise RuntimeError(f"{request.name}: Parley gave no answer ({outcome.plan})")
        exchanges = self.fake.exchanges[start:]
        run = tally(exchanges, self.registry, self.tokenizer)
        run.largest_executor_prompt = max(
            (e.usage.prompt_tokens for e in exchanges
             if e.usage and _system(e).startswith(prompts.EXECUTOR[:60])),
            default=0,
        )  # fmt: skip
        planner = [e for e in exchanges if _system(e).startswith(prompts.PLANNER[:60])]
        expected = request.expected(self.account)
        completeness(run, planner[-1] if planner else None, expected)
        run.answered = _items_in(outcome.plan.answer, expected)
        return run

    async def one_agent(self, request: Request) -> Run:
        start = len(self.fake.exchanges)
        async with self.db.service() as conn:
            session = await chats.create_session(conn, user_id=self.user, title=request.name)
            agent = await agents.create_agent(
                conn, user_id=self.user, chat_session_id=session.id, role="planner",
                name="one agent", model=PLANNER, permissions="read_write", token_budget=1_000_000,
            )  # fmt: skip
        registry = builtin_registry()
        tools = tool_schemas(offered_tools(agent, registry))
        history: list[Message] = [SystemMessage(prompts.with_date(ONE_AGENT)),
                                  UserMessage(request.message)]  # fmt: skip
        first = await self.client.complete(ChatRequest(PLANNER, history, tools=tools))
        history.append(AssistantMessage(first.text or None, first.tool_calls,
                                        first.message.reasoning_content))  # fmt: skip
        executor = ToolExecutor(self.db, registry)
        context = CallContext(agent_id=agent.id, user_id=self.user)
        turn = TurnCache()
        for call in first.tool_calls:
            result = await executor.execute(
                ExecutorCall(call.id, call.name, call.arguments_json), context=context, turn=turn
            )
            history.append(ToolMessage.answering(call, result.content()))
        final = await self.client.complete(ChatRequest(PLANNER, history, tools=tools))
        exchanges = self.fake.exchanges[start:]
        run = tally(exchanges, self.registry, self.tokenizer)
        expected = request.expected(self.account)
        completeness(run, exchanges[-1] if exchanges else None, expected)
        run.answered = _items_in(final.text, expected)
        return run


def _items_in(answer: str, expected: set[str]) -> int:
    """How many of the expected items the answer the user got shows as items."""
    return sum(1 for title in expected if shown(title, answer))


def _system(exchange: Exchange) -> str:
    messages = exchange.request.messages
    return str(messages[0].get("content", "")) if messages else ""


def _money(value: Decimal) -> str:
    return f"${value:.4f}"


def _ratio(a: Decimal, b: Decimal) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def report(names: Sequence[str], a_runs: Sequence[Run], b_runs: Sequence[Run]) -> None:
    head = (f"{'request':<16} {'design':<6} {'model':<16} {'calls':>5} {'prompt':>7} "
            f"{'hit':>7} {'output':>6}  {'peak cache':>10} {'no cache':>9}  "
            f"{'off-peak':>9} {'no cache':>9}  {'complete':>8}")  # fmt: skip
    print(head)
    print("-" * len(head))
    totals = {"A": Run(), "B": Run()}
    for name, a, b in zip(names, a_runs, b_runs, strict=True):
        for design, run in (("A", a), ("B", b)):
            for model, t in sorted(run.by_model.items(), key=lambda kv: kv[0] != PLANNER):
                totals[design].by_model[model].add(t)
                print(f"{name:<16} {design:<6} {model:<16} {t.calls:>5} {t.prompt:>7} "
                      f"{t.hit:>7} {t.output:>6}  "
                      + "  ".join(_money(t.cost[c]).rjust(9) for c in COSTS)
                      + f"  {run.seen:>3}/{run.expected:<4}")  # fmt: skip
                name = ""
            totals[design].expected += run.expected
            totals[design].seen += run.seen
            totals[design].answered += run.answered
            totals[design].largest_executor_prompt = max(
                totals[design].largest_executor_prompt, run.largest_executor_prompt
            )
        at, bt = a.total, b.total
        print(f"{'':<16} A÷B cost: {_ratio(at.cost['peak/cache'], bt.cost['peak/cache'])} "
              f"with cache, {_ratio(at.cost['peak/no cache'], bt.cost['peak/no cache'])} "
              "without")  # fmt: skip
    print("-" * len(head))
    for design in ("A", "B"):
        run = totals[design]
        for model, t in sorted(run.by_model.items(), key=lambda kv: kv[0] != PLANNER):
            print(
                f"{'TOTAL':<16} {design:<6} {model:<16} {t.calls:>5} {t.prompt:>7} {t.hit:>7} "
                f"{t.output:>6}  " + "  ".join(_money(t.cost[c]).rjust(9) for c in COSTS)
            )
        t = run.total
        share = 100 * t.schemas / t.prompt if t.prompt else 0
        hits = 100 * t.hit / t.prompt if t.prompt else 0
        print(f"{'':<16} {design}: {t.prompt} prompt tokens ({hits:.0f}% cache hits, "
              f"{share:.0f}% tool schemas), {t.output} output; cost "
              + ", ".join(f"{c} {_money(t.cost[c])}" for c in COSTS)
              + f"; completeness {run.seen}/{run.expected} "
              f"({100 * run.seen / max(run.expected, 1):.0f}%), in the answers "
              f"{run.answered}/{run.expected}")  # fmt: skip
    print(f"largest executor prompt: {totals['A'].largest_executor_prompt} tokens")
    at, bt = totals["A"].total, totals["B"].total
    print(
        f"A÷B cost: {_ratio(at.cost['peak/cache'], bt.cost['peak/cache'])} with cache, "
        f"{_ratio(at.cost['peak/no cache'], bt.cost['peak/no cache'])} without cache "
        f"(off-peak: {_ratio(at.cost['off-peak/cache'], bt.cost['off-peak/cache'])} / "
        f"{_ratio(at.cost['off-peak/no cache'], bt.cost['off-peak/no cache'])})"
    )


async def run(overrides: dict[str, Any]) -> None:
    server_url = databases.server_url()
    url = databases.create_database(server_url, template=databases.ensure_template(server_url))
    try:
        with FakeModelServer() as fake:
            await _both(url, fake, overrides)
    finally:
        databases.drop_database(server_url, url)


async def _both(url: str, fake: FakeModelServer, overrides: dict[str, Any]) -> None:
    async with Database(url) as db:
        bench = Bench(db, url, fake, overrides)
        todo = await bench.seed()
        fake.respond_with(BenchScript(todo))
        a_runs = [await bench.parley(request) for request in todo]
        fake.reset()  # a fresh cache (and log) for the other design
        fake.respond_with(BenchScript(todo))
        b_runs = [await bench.one_agent(request) for request in todo]
        await bench.client.aclose()
    report([r.name for r in todo], a_runs, b_runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor-budget", type=int, help="EXECUTOR_TOKEN_BUDGET for design A "
                        "(default: Parley's default)")  # fmt: skip
    args = parser.parse_args()
    overrides = {} if args.executor_budget is None else {
        "executor_token_budget": args.executor_budget}  # fmt: skip
    asyncio.run(run(overrides))


if __name__ == "__main__":
    main()
