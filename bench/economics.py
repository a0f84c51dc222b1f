"""Benchmark: does delegating pay? Parley's planner→executors against one agent doing it all.

    .venv/bin/python -m bench.economics [--executor-budget N]
    .venv/bin/python -m bench.economics --live [--max-usd 0.50]

`--live` sends the same requests to the configured model (`DEEPSEEK_API_KEY`, or
`LLM_BASE_URL` + `LLM_API_KEY`) instead of the scripted twin, so the cost figures of
docs/explanation/economics.md can be checked on one's own account: the real model plans, reads
and answers, its usage is what the provider reports, and the run stops before a call once
`--max-usd` (priced by the registry) is spent, reporting what it measured so far.

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
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import uuid4

from bench import account as seeded
from bench.replies import ONE_AGENT, BenchScript
from bench.requests import Request, requests
from local.deepseek import Exchange, FakeModelServer
from shared.agents import prompts
from shared.agents.model_calls import tool_schemas
from shared.db import Database, agents, chats, users
from shared.dispatch.in_process import run_turn
from shared.kernel.settings import Settings
from shared.llm import (
    AssistantMessage,
    ChatRequest,
    Completed,
    Completion,
    LLMError,
    Message,
    ModelInfo,
    OpenAIClient,
    Price,
    RetryPolicy,
    StreamEvent,
    SystemMessage,
    ToolMessage,
    UserMessage,
    collect,
    load_registry,
)
from shared.llm.messages import to_wire
from shared.llm.tokens import DeepSeekTokenizer, count_tools
from shared.services import Services, load_settings
from shared.tools import CallContext, ToolExecutor, TurnCache, builtin_registry, offered_tools
from shared.tools import ToolCall as ExecutorCall
from tests.support import databases
from tests.support.in_memory_publisher import InMemoryPublisher

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


@dataclass(frozen=True, slots=True)
class Call:
    """One model call as the benchmark counts it: from the twin's log, or from a live reply."""

    model: str
    prompt: int
    hit: int
    output: int
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]

    @classmethod
    def of_exchange(cls, exchange: Exchange) -> Call | None:
        usage, body = exchange.usage, exchange.request.body
        if usage is None:
            return None
        tools = [x for x in body.get("tools") or () if isinstance(x, dict)]
        return cls(
            exchange.request.model,
            usage.prompt_tokens,
            usage.cache_hit_tokens,
            usage.completion_tokens,
            tools,
            exchange.request.messages,
        )

    @classmethod
    def of_reply(cls, request: ChatRequest, done: Completion) -> Call:
        tokens = done.tokens
        tools = [tool.to_wire() for tool in request.tools]
        messages = to_wire(request.messages, thinking=False, tools=bool(tools))
        return cls(
            request.model,
            tokens.prompt_tokens,
            tokens.cache_hit_tokens,
            tokens.completion_tokens,
            tools,
            messages,
        )


class SpendingCapReached(LLMError):
    """The live run has spent its `--max-usd`: no more calls."""


class LiveRecorder:
    """An `LLMClient` in front of the real one: records every reply, and refuses a call once
    the cap is spent (what it measured so far is reported)."""

    def __init__(self, inner: OpenAIClient, cap: Decimal) -> None:
        self.inner, self.cap = inner, cap
        self.calls: list[Call] = []
        self.spent = Decimal(0)

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        return self._stream(request)

    async def _stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        if self.spent >= self.cap:
            raise SpendingCapReached(f"the spending cap of ${self.cap} is reached")
        async for event in self.inner.stream(request):
            if isinstance(event, Completed):
                self.calls.append(Call.of_reply(request, event.completion))
                self.spent += event.completion.usage.cost_usd
            yield event

    async def complete(self, request: ChatRequest) -> Completion:
        return await collect(self.stream(request))

    async def aclose(self) -> None:
        await self.inner.aclose()


def price_at(info: ModelInfo, when: datetime) -> Price:
    """The model's price per 1M tokens for a call finishing at `when` (the registry's rates)."""
    price = info.price_at(when)
    assert price is not None, f"{info.name} has no price in the registry"
    return price


def tally(calls: Sequence[Call], registry: Any, tokenizer: DeepSeekTokenizer) -> Run:
    run = Run()
    for call in calls:
        info = registry.lookup(call.model)
        t = run.by_model[call.model]
        t.calls += 1
        t.prompt += call.prompt
        t.hit += call.hit
        t.output += call.output
        t.schemas += count_tools(tokenizer, call.tools)
        for when, label in ((PEAK, "peak"), (OFF_PEAK, "off-peak")):
            price = price_at(info, when)
            for hits, kind in ((call.hit, "cache"), (0, "no cache")):
                misses = call.prompt - hits
                cost = (
                    hits * price.cache_hit + misses * price.cache_miss + call.output * price.output
                ) / MILLION
                t.cost[f"{label}/{kind}"] += cost
    return run


def completeness(run: Run, answering: Call | None, expected: set[str]) -> None:
    """Count the expected items that appear in what the answering model was given."""
    text = ""
    if answering is not None:
        text = "\n".join(str(m.get("content") or "") for m in answering.messages)
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
    """The database, the account, the model (the twin, or a live endpoint) and both designs."""

    def __init__(
        self,
        db: Database,
        url: str,
        model: FakeModelServer | LiveRecorder,
        overrides: dict[str, Any],
    ) -> None:
        self.db, self.url, self.model, self.overrides = db, url, model, overrides
        self.tokenizer = DeepSeekTokenizer()
        self.registry = load_registry()
        self.client: OpenAIClient | LiveRecorder
        if isinstance(model, FakeModelServer):
            self.client = OpenAIClient(
                base_url=model.base_url, api_key=None, retry=RetryPolicy(max_retries=0)
            )
        else:
            self.client = model
        self.user = uuid4()

    def calls(self) -> list[Call]:
        """Every call so far, as the benchmark counts them."""
        if isinstance(self.model, LiveRecorder):
            return list(self.model.calls)
        found = (Call.of_exchange(e) for e in self.model.exchanges)
        return [call for call in found if call is not None]

    async def seed(self) -> list[Request]:
        async with self.db.service() as conn:
            await users.ensure_user(conn, user_id=self.user, email=f"{self.user}@bench.local")
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        account = await seeded.seed(self.db, self.user, today)
        self.account = account
        return requests(account)

    def services(self) -> Services:
        settings = Settings(
            database_url=self.url,
            llm_planner_model=PLANNER,
            llm_executor_model=EXECUTOR,
            executor_concurrency=1,
            llm_max_retries=0,
            approvals="off",
            **self.overrides,
        )
        return Services(settings, db=self.db, llm=self.client, tokens=self.tokenizer)

    async def parley(self, request: Request) -> Run:
        start = len(self.calls())
        outcome = await run_turn(
            self.services(),
            user_id=self.user,
            session_id=None,
            message=request.message,
            publisher=InMemoryPublisher(),
        )
        if outcome.plan.answer is None:
            if isinstance(self.model, LiveRecorder) and self.model.spent >= self.model.cap:
                raise SpendingCapReached("the cap was reached during the turn")
            raise RuntimeError(f"{request.name}: Parley gave no answer ({outcome.plan})")
        calls = self.calls()[start:]
        run = tally(calls, self.registry, self.tokenizer)
        run.largest_executor_prompt = max(
            (c.prompt for c in calls if _system(c).startswith(prompts.EXECUTOR[:60])), default=0
        )
        planner = [c for c in calls if _system(c).startswith(prompts.PLANNER[:60])]
        expected = request.expected(self.account)
        completeness(run, planner[-1] if planner else None, expected)
        run.answered = _items_in(outcome.plan.answer, expected)
        return run

    async def one_agent(self, request: Request) -> Run:
        start = len(self.calls())
        async with self.db.service() as conn:
            session = await chats.create_session(conn, user_id=self.user, title=request.name)
            agent = await agents.create_agent(
                conn,
                user_id=self.user,
                chat_session_id=session.id,
                role="planner",
                name="one agent",
                model=PLANNER,
                permissions="read_write",
                token_budget=1_000_000,
            )
        registry = builtin_registry()
        tools = tool_schemas(offered_tools(agent, registry))
        history: list[Message] = [
            SystemMessage(prompts.with_date(ONE_AGENT)),
            UserMessage(request.message),
        ]
        first = await self.client.complete(ChatRequest(PLANNER, history, tools=tools))
        history.append(
            AssistantMessage(first.text or None, first.tool_calls, first.message.reasoning_content)
        )
        executor = ToolExecutor(self.db, registry)
        context = CallContext(agent_id=agent.id, user_id=self.user)
        turn = TurnCache()
        for call in first.tool_calls:
            result = await executor.execute(
                ExecutorCall(call.id, call.name, call.arguments_json), context=context, turn=turn
            )
            history.append(ToolMessage.answering(call, result.content()))
        final = await self.client.complete(ChatRequest(PLANNER, history, tools=tools))
        calls = self.calls()[start:]
        run = tally(calls, self.registry, self.tokenizer)
        expected = request.expected(self.account)
        completeness(run, calls[-1] if calls else None, expected)
        run.answered = _items_in(final.text, expected)
        return run


def _items_in(answer: str, expected: set[str]) -> int:
    """How many of the expected items the answer the user got shows as items."""
    return sum(1 for title in expected if shown(title, answer))


def _system(call: Call) -> str:
    return str(call.messages[0].get("content", "")) if call.messages else ""


def _money(value: Decimal) -> str:
    return f"${value:.4f}"


def _ratio(a: Decimal, b: Decimal) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def report(names: Sequence[str], a_runs: Sequence[Run], b_runs: Sequence[Run]) -> None:
    head = (
        f"{'request':<16} {'design':<6} {'model':<16} {'calls':>5} {'prompt':>7} "
        f"{'hit':>7} {'output':>6}  {'peak cache':>10} {'no cache':>9}  "
        f"{'off-peak':>9} {'no cache':>9}  {'complete':>8}"
    )
    print(head)
    print("-" * len(head))
    totals = {"A": Run(), "B": Run()}
    for name, a, b in zip(names, a_runs, b_runs, strict=True):
        for design, run in (("A", a), ("B", b)):
            for model, t in sorted(run.by_model.items(), key=lambda kv: kv[0] != PLANNER):
                totals[design].by_model[model].add(t)
                print(
                    f"{name:<16} {design:<6} {model:<16} {t.calls:>5} {t.prompt:>7} "
                    f"{t.hit:>7} {t.output:>6}  "
                    + "  ".join(_money(t.cost[c]).rjust(9) for c in COSTS)
                    + f"  {run.seen:>3}/{run.expected:<4}"
                )
                name = ""
            totals[design].expected += run.expected
            totals[design].seen += run.seen
            totals[design].answered += run.answered
            totals[design].largest_executor_prompt = max(
                totals[design].largest_executor_prompt, run.largest_executor_prompt
            )
        at, bt = a.total, b.total
        print(
            f"{'':<16} A÷B cost: {_ratio(at.cost['peak/cache'], bt.cost['peak/cache'])} "
            f"with cache, {_ratio(at.cost['peak/no cache'], bt.cost['peak/no cache'])} "
            "without"
        )
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
        print(
            f"{'':<16} {design}: {t.prompt} prompt tokens ({hits:.0f}% cache hits, "
            f"{share:.0f}% tool schemas), {t.output} output; cost "
            + ", ".join(f"{c} {_money(t.cost[c])}" for c in COSTS)
            + f"; completeness {run.seen}/{run.expected} "
            f"({100 * run.seen / max(run.expected, 1):.0f}%), in the answers "
            f"{run.answered}/{run.expected}"
        )
    print(f"largest executor prompt: {totals['A'].largest_executor_prompt} tokens")
    at, bt = totals["A"].total, totals["B"].total
    print(
        f"A÷B cost: {_ratio(at.cost['peak/cache'], bt.cost['peak/cache'])} with cache, "
        f"{_ratio(at.cost['peak/no cache'], bt.cost['peak/no cache'])} without cache "
        f"(off-peak: {_ratio(at.cost['off-peak/cache'], bt.cost['off-peak/cache'])} / "
        f"{_ratio(at.cost['off-peak/no cache'], bt.cost['off-peak/no cache'])})"
    )


async def run(overrides: dict[str, Any], live_cap: Decimal | None) -> None:
    server_url = databases.server_url()
    url = databases.create_database(server_url, template=databases.ensure_template(server_url))
    try:
        if live_cap is not None:
            await _live(url, overrides, live_cap)
        else:
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


async def _live(url: str, overrides: dict[str, Any], cap: Decimal) -> None:
    """Both designs against the configured endpoint, request by request (A then B), until the
    cap: a request begun is finished only if the cap allows each of its calls."""
    settings = load_settings()
    if settings.llm_api_key is None:
        raise SystemExit(
            "bench.economics --live: set DEEPSEEK_API_KEY (or LLM_BASE_URL and "
            "LLM_API_KEY) to the endpoint to measure"
        )
    recorder = LiveRecorder(OpenAIClient.from_settings(settings), cap)
    names: list[str] = []
    a_runs: list[Run] = []
    b_runs: list[Run] = []
    async with Database(url) as db:
        bench = Bench(db, url, recorder, overrides)
        try:
            for request in await bench.seed():
                a, b = await bench.parley(request), await bench.one_agent(request)
                names.append(request.name)
                a_runs.append(a)
                b_runs.append(b)
        except SpendingCapReached:
            print(f"Stopped at the spending cap (${cap}): {len(names)} request(s) measured.")
        finally:
            await recorder.aclose()
    print(f"Live, against {recorder.inner.base_url}: spent ${recorder.spent:.4f}.")
    if names:
        report(names, a_runs, b_runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--executor-budget",
        type=int,
        help="EXECUTOR_TOKEN_BUDGET for design A (default: Parley's default)",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="measure against the configured "
        "endpoint (DEEPSEEK_API_KEY / LLM_BASE_URL), not the twin",
    )
    parser.add_argument(
        "--max-usd",
        type=Decimal,
        default=Decimal("0.50"),
        help="--live: stop once this much is spent (default 0.50)",
    )
    args = parser.parse_args()
    overrides = (
        {} if args.executor_budget is None else {"executor_token_budget": args.executor_budget}
    )
    asyncio.run(run(overrides, args.max_usd if args.live else None))


if __name__ == "__main__":
    main()
