"""Tokens and cost of model calls, as rows store them and events carry them."""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of one or more LLM calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cache_hit_tokens + other.cache_hit_tokens,
            self.cost_usd + other.cost_usd,
        )

    def json(self) -> dict[str, Any]:
        """As rows' JSON and events carry it (the cost as a decimal string: exact)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hit_tokens": self.cache_hit_tokens,
            "cost_usd": format(self.cost_usd, "f"),  # never exponent notation ("0E-8")
        }
