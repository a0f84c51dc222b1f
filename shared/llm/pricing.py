"""Token counts as providers report them, and what they cost."""

from decimal import Decimal
from typing import Any, NamedTuple

from shared.kernel.usage import Usage

PER_MILLION = Decimal(1_000_000)


class Price(NamedTuple):
    """USD per 1M tokens."""

    cache_hit: Decimal
    cache_miss: Decimal
    output: Decimal


class TokenCounts(NamedTuple):
    """One call's tokens. `prompt_tokens` includes the cache hits (DeepSeek and OpenAI agree)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int | None = None
    """DeepSeek reports it; elsewhere it is `prompt_tokens - cache_hit_tokens`."""
    reasoning_tokens: int = 0
    """Part of `completion_tokens` spent thinking, when the provider says."""

    @property
    def cache_misses(self) -> int:
        if self.cache_miss_tokens is not None:
            return self.cache_miss_tokens
        return max(self.prompt_tokens - self.cache_hit_tokens, 0)

    def cost(self, price: Price) -> Decimal:
        """Exact cost in USD."""
        total = (
            self.cache_hit_tokens * price.cache_hit
            + self.cache_misses * price.cache_miss
            + self.completion_tokens * price.output
        )
        return total / PER_MILLION

    def to_usage(self, price: Price | None) -> Usage:
        """The record the data layer stores; cost 0 when the price is unknown."""
        cost = self.cost(price) if price is not None else Decimal(0)
        return Usage(self.prompt_tokens, self.completion_tokens, self.cache_hit_tokens, cost)


def parse_usage(raw: Any) -> TokenCounts:
    """Read a chat-completions `usage` object (a mapping or an attribute object).

    Understands DeepSeek's `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens` and OpenAI's
    `prompt_tokens_details.cached_tokens`; absent or null fields count as 0.
    """
    details = _get(raw, "prompt_tokens_details")
    completion_details = _get(raw, "completion_tokens_details")
    hit = _get(raw, "prompt_cache_hit_tokens")
    if hit is None:
        hit = _get(details, "cached_tokens")
    miss = _get(raw, "prompt_cache_miss_tokens")
    return TokenCounts(
        prompt_tokens=_int(_get(raw, "prompt_tokens")),
        completion_tokens=_int(_get(raw, "completion_tokens")),
        cache_hit_tokens=_int(hit),
        cache_miss_tokens=None if miss is None else _int(miss),
        reasoning_tokens=_int(_get(completion_details, "reasoning_tokens")),
    )


def _get(source: Any, key: str) -> Any:
    if source is None:
        return None
    if isinstance(source, dict):
        return source.get(key)
    return getattr(source, key, None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
