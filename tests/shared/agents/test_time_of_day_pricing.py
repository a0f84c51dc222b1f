"""Each call is priced by the hour its response finished: the stored cost, the plan's cost (the
cost cap's measure) and `execution_stats_daily` all add the priced costs.

This module has its own database, so the view holds exactly these runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from local.deepseek import FakeModelServer, reply
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.kernel.settings import Settings
from shared.llm import OpenAIClient, RetryPolicy, load_registry
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.support import databases
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.stored_rows import stored

PEAK = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)  # Monday 10:00 in Beijing
OFF_PEAK = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)  # Saturday
MILLION = Decimal(1_000_000)
STORED = Decimal("0.000001")


@pytest.fixture(scope="module")
def database_url(server_url: str, template_name: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=template_name)
    yield url
    databases.drop_checked(server_url, url)


@pytest.fixture(scope="module")
async def db(database_url: str) -> AsyncIterator[Database]:
    async with Database(database_url, max_size=4) as database:
        yield database


async def turn_at(
    when: datetime, db: Database, url: str, fake: FakeModelServer, tokenizer: DeepSeekTokenizer
) -> Decimal:
    """One direct answer by deepseek-v4-pro on a client whose clock reads `when`; its cost."""
    client = OpenAIClient(
        base_url=fake.base_url,
        api_key="sk-test",
        retry=RetryPolicy(max_retries=0),
        now=when.timestamp,
    )
    settings = Settings(database_url=url, llm_base_url=fake.base_url, llm_max_retries=0)
    services = Services(settings, db=db, llm=client, tokens=tokenizer)
    user = await make_user(db)
    fake.script(reply("Noted."))
    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="Remember: blue.",
        publisher=InMemoryPublisher(),
    )
    await client.aclose()
    plan = (await stored(db, turn.started.plan_id)).plan
    return plan.cost_usd


async def test_a_peak_and_an_off_peak_call_are_priced_and_summed_as_billed(
    db: Database, database_url: str, fake: FakeModelServer, tokenizer: DeepSeekTokenizer
) -> None:
    pro = load_registry().lookup("deepseek-v4-pro")

    peak = await turn_at(PEAK, db, database_url, fake, tokenizer)
    off_peak = await turn_at(OFF_PEAK, db, database_url, fake, tokenizer)

    first, second = (e.usage for e in fake.exchanges)
    assert first is not None and second is not None
    for usage, when, cost in ((first, PEAK, peak), (second, OFF_PEAK, off_peak)):
        price = pro.price_at(when)
        assert price is not None
        misses = usage.prompt_tokens - usage.cache_hit_tokens
        billed = (
            usage.cache_hit_tokens * price.cache_hit
            + misses * price.cache_miss
            + usage.completion_tokens * price.output
        ) / MILLION
        assert cost == billed.quantize(STORED)  # cost_usd is stored to the micro-dollar
    assert peak > off_peak > 0
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT sum(cost_usd) AS cost FROM execution_stats_daily WHERE model = %s",
            ("deepseek-v4-pro",),
        )
        row = await cur.fetchone()
    assert row is not None and row["cost"] == peak + off_peak
