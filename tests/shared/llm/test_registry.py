"""The model registry: inheritance by pattern, new names of known families, unknown models."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from decimal import Decimal
from email.utils import formatdate
from pathlib import Path
from typing import get_args

import pytest

from local.deepseek import FakeModelServer, reply, usage
from shared.kernel.usage import Usage
from shared.llm import (
    ChatRequest,
    LLMNotConfigured,
    Price,
    TokenCounts,
    UserMessage,
    load_registry,
    model_registry,
    registry_file,
)
from shared.llm.pricing import parse_usage
from shared.llm.retry import RetryPolicy, parse_retry_after
from tests.shared.llm.conftest import MakeClient

REGISTRY = load_registry()


def test_specific_patterns_override_general_ones() -> None:
    chat, reasoner = REGISTRY.lookup("deepseek-chat"), REGISTRY.lookup("deepseek-reasoner")
    flash = REGISTRY.lookup("deepseek-flash")

    assert (chat.family, chat.known, chat.thinking, chat.context_window) == (
        "deepseek",
        True,
        False,
        128_000,
    )
    assert (reasoner.thinking, reasoner.context_window) == (True, 128_000)
    assert (flash.thinking, flash.context_window) == (True, 1_000_000)
    assert chat.price == reasoner.price == flash.price is not None
    assert chat.matched == (
        "deepseek-.*",
        "deepseek-(chat|reasoner|coder).*",
        "deepseek-(chat|coder).*",
    )
    assert (chat.retired, chat.replaced_by) == ("2026-07-24", "deepseek-flash")
    assert flash.retired is None and REGISTRY.lookup("deepseek-v4-pro").retired is None


def test_new_names_of_known_families_need_no_config() -> None:
    chat_v4 = REGISTRY.lookup("deepseek-chat-v4")
    pro = REGISTRY.lookup("deepseek-v5-pro")
    mini = REGISTRY.lookup("gpt-5.2-mini")
    routed = REGISTRY.lookup("deepseek/deepseek-chat")  # OpenRouter's vendor prefix

    assert (chat_v4.family, chat_v4.thinking) == ("deepseek", False)
    assert pro.role == "planner" and pro.price != chat_v4.price
    assert (mini.family, mini.role, mini.context_window) == ("openai", "executor", 400_000)
    assert mini.price == REGISTRY.lookup("gpt-5-mini").price
    assert mini.price != REGISTRY.lookup("gpt-5.2").price
    assert routed.price == REGISTRY.lookup("deepseek-chat").price


def test_unknown_model_gets_a_marked_fallback() -> None:
    info = REGISTRY.lookup("llama3.1:8b")

    assert (info.known, info.family, info.price, info.matched) == (False, "unknown", None, ())
    assert info.supports_tools and not info.thinking
    assert info.usage(TokenCounts(100, 50)) == Usage(100, 50, 0, Decimal(0))


async def test_unknown_model_calls_work_and_say_the_cost_is_unknown(
    fake: FakeModelServer, make_client: MakeClient
) -> None:
    fake.script(reply("hi", usage=usage(10, 5)))

    done = await make_client().complete(ChatRequest("mystery-1", [UserMessage("x")]))

    assert done.usage == Usage(10, 5, 0, Decimal(0)) and not done.cost_known


PRO_PEAK = Price(Decimal("0.044"), Decimal("1.32"), Decimal("3.96"))
PRO_OFF_PEAK = Price(Decimal("0.022"), Decimal("0.66"), Decimal("1.98"))


@pytest.mark.parametrize(
    ("when", "price"),
    [
        (datetime(2026, 11, 23, 2, 0, tzinfo=UTC), PRO_PEAK),  # Monday 10:00 in Beijing
        (datetime(2026, 11, 23, 1, 0, tzinfo=UTC), PRO_PEAK),  # 09:00: the window opens
        (datetime(2026, 11, 23, 4, 0, tzinfo=UTC), PRO_OFF_PEAK),  # 12:00: lunch is off-peak
        (datetime(2026, 11, 23, 6, 0, tzinfo=UTC), PRO_PEAK),  # 14:00
        (datetime(2026, 11, 23, 9, 59, tzinfo=UTC), PRO_PEAK),  # 17:59
        (datetime(2026, 11, 23, 12, 0, tzinfo=UTC), PRO_OFF_PEAK),  # 20:00
        (datetime(2026, 11, 28, 2, 0, tzinfo=UTC), PRO_OFF_PEAK),  # Saturday
        (datetime(2026, 10, 1, 2, 0, tzinfo=UTC), PRO_OFF_PEAK),  # National Day (a Thursday)
    ],
)
def test_deepseek_calls_are_priced_by_the_hour_they_finish(when: datetime, price: Price) -> None:
    pro = REGISTRY.lookup("deepseek-v4-pro")
    tokens = TokenCounts(prompt_tokens=10_000, completion_tokens=1_000, cache_hit_tokens=4_000)

    assert pro.price_at(when) == price
    assert pro.usage(tokens, at=when).cost_usd == tokens.cost(price)


async def test_the_client_prices_a_reply_by_its_clock(
    fake: FakeModelServer, make_client: MakeClient, tmp_path: Path
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[peak_hours.office]\ntimezone = "Europe/Berlin"\nweekdays = [1, 2, 3, 4, 5]\n'
        'hours = ["09:00-17:00"]\n\n[[model]]\nmatch = "test-model"\n'
        'price = { cache_hit = "1", cache_miss = "10", output = "20" }\n'
        'off_peak_price = { cache_hit = "0.5", cache_miss = "5", output = "10" }\n'
        'peak_hours = "office"\n'
    )
    registry = load_registry(path)
    saturday = datetime(2026, 11, 28, 12, 0, tzinfo=UTC).timestamp()
    monday = datetime(2026, 11, 23, 12, 0, tzinfo=UTC).timestamp()
    fake.script(reply("a", usage=usage(1000, 100)), reply("b", usage=usage(1000, 100)))

    weekend = await make_client(registry=registry, now=lambda: saturday).complete(
        ChatRequest("test-model", [UserMessage("x")])
    )
    weekday = await make_client(registry=registry, now=lambda: monday).complete(
        ChatRequest("test-model", [UserMessage("x")])
    )

    assert weekend.usage.cost_usd == Decimal("0.006")  # (1000*5 + 100*10) / 1e6
    assert weekday.usage.cost_usd == Decimal("0.012")


def test_cost_is_exact_decimal_arithmetic() -> None:
    price = Price(cache_hit=Decimal("0.028"), cache_miss=Decimal("0.28"), output=Decimal("0.42"))
    tokens = TokenCounts(prompt_tokens=12_345, completion_tokens=678, cache_hit_tokens=10_000)

    # (10000*0.028 + 2345*0.28 + 678*0.42) / 1e6
    assert tokens.cost(price) == Decimal("0.00122136")
    assert TokenCounts(1_000_000, 1_000_000, 0).cost(price) == Decimal("0.70")


def test_usage_is_read_in_deepseek_and_openai_dialects() -> None:
    deepseek = {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 36,
    }
    openai = {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 32},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }

    assert parse_usage(deepseek) == TokenCounts(100, 7, 64, 36, 0)
    assert parse_usage(openai) == TokenCounts(100, 7, 32, None, 5)
    assert parse_usage(openai).cache_misses == 68
    assert parse_usage({"prompt_tokens": None}) == TokenCounts()


def test_override_file_adds_and_overrides_entries(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[[model]]\nmatch = "deepseek-chat.*"\nprice = { cache_hit = 0, '
        'cache_miss = "0.5", output = "1.5" }\n\n[[model]]\nmatch = "llama.*"\n'
        'family = "llama"\ncontext_window = 131072\nprice = { cache_hit = 0, '
        "cache_miss = 0, output = 0 }\n"
    )

    registry = load_registry(path)

    chat = registry.lookup("deepseek-chat")
    assert chat.price == Price(Decimal(0), Decimal("0.5"), Decimal("1.5"))
    assert (chat.family, chat.thinking) == ("deepseek", False)  # the rest still inherited
    llama = registry.lookup("llama3.1:8b")
    assert (llama.known, llama.family, llama.context_window) == (True, "llama", 131072)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('[[model]]\nmatch = "gpt-("\n', "not a valid regular expression"),
        ('[[model]]\nmatch = "x"\ncontext_windw = 5\n', "Extra inputs are not permitted"),
        (
            '[[model]]\nmatch = "x"\nprice = { cache_hit = -1, cache_miss = 0, output = 0 }\n',
            "greater than or equal to 0",
        ),
        ("[[model]\n", "not valid TOML"),
        ('[[model]]\nmatch = "x"\npeak_hours = "nope"\n', "names no \\[peak_hours.nope\\]"),
        (
            '[peak_hours.x]\ntimezone = "Mars/Olympus"\nweekdays = [1]\nhours = ["09:00-10:00"]\n',
            "unknown time zone",
        ),
        (
            '[peak_hours.x]\ntimezone = "UTC"\nweekdays = [8]\nhours = ["09:00-10:00"]\n',
            "ISO numbers",
        ),
        (
            '[peak_hours.x]\ntimezone = "UTC"\nweekdays = [1]\nhours = ["10:00-09:00"]\n',
            "ends before it starts",
        ),
    ],
)
def test_a_broken_override_file_is_a_clear_configuration_error(
    tmp_path: Path, text: str, complaint: str
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(text)

    with pytest.raises(LLMNotConfigured, match=complaint) as caught:
        load_registry(path)

    assert str(path) in str(caught.value)


def test_missing_override_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(LLMNotConfigured, match=r"LLM_MODELS_FILE=.*cannot be read"):
        load_registry(tmp_path / "absent.toml")


SHIPPED = Path(model_registry.__file__).with_name(model_registry.SHIPPED)
NAMES = (
    "deepseek-chat",
    "deepseek-reasoner",
    "deepseek-coder",
    "deepseek-v4-pro",
    "deepseek-v4-flash",
    "deepseek-flash",
    "deepseek/deepseek-chat",
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-5",
    "gpt-5.2-mini",
    "o1",
    "o3-mini",
    "o4-mini",
    "claude-sonnet-4",
    "llama3.1:8b",
    "no-such-model",
)


def test_the_shipped_registry_is_in_the_registry_format() -> None:
    """At run time the shipped file is read as is (it changes only with the code): this is
    where it is checked, against the schema an operator's override file is checked against."""
    table = tomllib.loads(SHIPPED.read_text(encoding="utf-8"))

    checked = registry_file.checked(table, origin=str(SHIPPED))

    assert checked["model"] and checked["peak_hours"]
    as_read, as_checked = (
        model_registry.ModelRegistry([table]),
        model_registry.ModelRegistry([checked]),
    )
    for name in (*NAMES, *(entry["match"].replace(".*", "") for entry in table["model"])):
        assert as_read.lookup(name) == as_checked.lookup(name), name


def test_the_file_format_knows_the_registry_roles() -> None:
    assert get_args(registry_file.ModelRole) == get_args(model_registry.ModelRole)


def test_retry_after_parsing_and_backoff_bounds() -> None:
    now = 1_800_000_000.0
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_ten = formatdate(now + 10, usegmt=True)
    assert parse_retry_after({"retry-after": in_ten}, now=lambda: now) == 10.0
    assert parse_retry_after({"retry-after": in_ten}, now=lambda: now + 60) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert all(
        0 <= policy.delay(n) <= min(5.0, 2 ** (n - 1)) for n in range(1, 8) for _ in range(50)
    )
    assert policy.delay(1, retry_after=99) == 5.0
