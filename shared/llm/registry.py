"""The model registry: price, context window and capabilities, found by model name.

The shipped table is `models.toml` beside this module (its header explains the format). An
override file (setting `LLM_MODELS_FILE`) adds entries that apply after the shipped ones.
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.db.records import Usage
from shared.llm.errors import LLMNotConfigured
from shared.llm.usage import Price, TokenCounts

log = logging.getLogger(__name__)

ModelRole = Literal["planner", "executor", "any"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What Parley knows about one model name."""

    name: str
    family: str
    """Family of the first matching entry that names one; "unknown" when none matched."""
    known: bool
    """False when no registry entry matched: every field is a fallback default."""
    price: Price | None
    """None when the price is unknown: calls then cost 0 and `Completion.cost_known` is False."""
    context_window: int
    supports_tools: bool
    thinking: bool
    thinking_toggle: bool
    """Accepts DeepSeek's `thinking: {"type": "enabled" | "disabled"}` request field."""
    role: ModelRole
    matched: tuple[str, ...]
    """The patterns that applied, general to specific (for debugging a lookup)."""

    def usage(self, tokens: TokenCounts) -> Usage:
        """The storable usage of a call to this model, priced from the registry."""
        return tokens.to_usage(self.price)


class _PriceFields(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    cache_hit: Decimal = Field(ge=0)
    cache_miss: Decimal = Field(ge=0)
    output: Decimal = Field(ge=0)


class _Fields(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    family: str | None = None
    source: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    supports_tools: bool | None = None
    thinking: bool | None = None
    thinking_toggle: bool | None = None
    role: ModelRole | None = None
    price: _PriceFields | None = None


class _Entry(_Fields):
    match: str

    @field_validator("match")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    defaults: _Fields = _Fields()
    model: list[_Entry] = []


_FALLBACK: dict[str, Any] = {
    "context_window": 8192, "supports_tools": True, "thinking": False, "thinking_toggle": False,
    "role": "any",
}  # fmt: skip


class ModelRegistry:
    """Resolves model names; build one with `load_registry`."""

    def __init__(self, files: list[_File]) -> None:
        self._defaults: dict[str, Any] = dict(_FALLBACK)
        self._entries: list[tuple[re.Pattern[str], _Entry]] = []
        for file in files:
            self._defaults.update(_set_fields(file.defaults))
            self._entries += [(re.compile(entry.match), entry) for entry in file.model]
        self._cache: dict[str, ModelInfo] = {}

    def lookup(self, name: str) -> ModelInfo:
        """The model's info; a clearly marked fallback (`known=False`) for unknown names.

        A `vendor/` prefix (OpenRouter's `deepseek/deepseek-chat`) is ignored when matching.
        """
        if (info := self._cache.get(name)) is None:
            info = self._cache[name] = self._resolve(name)
            if not info.known:
                log.warning("model %r is not in the registry: price unknown, cost recorded as 0 "
                            "(add it to a file named by LLM_MODELS_FILE)", name)  # fmt: skip
        return info

    def _resolve(self, name: str) -> ModelInfo:
        bare = name.rsplit("/", 1)[-1]
        fields = dict(self._defaults)
        matched: list[str] = []
        family: str | None = None
        for pattern, entry in self._entries:
            if pattern.fullmatch(bare) or pattern.fullmatch(name):
                fields.update(_set_fields(entry))
                matched.append(entry.match)
                family = family or entry.family
        price = fields.get("price")
        return ModelInfo(
            name=name,
            family=family or "unknown",
            known=bool(matched),
            price=Price(price.cache_hit, price.cache_miss, price.output) if price else None,
            context_window=fields["context_window"],
            supports_tools=fields["supports_tools"],
            thinking=fields["thinking"],
            thinking_toggle=fields["thinking_toggle"],
            role=fields["role"],
            matched=tuple(matched),
        )


def _set_fields(fields: _Fields) -> dict[str, Any]:
    """The fields an entry sets explicitly (the others inherit)."""
    return {key: getattr(fields, key) for key in fields.model_fields_set if key != "match"}


SHIPPED = "models.toml"


def load_registry(override: Path | None = None) -> ModelRegistry:
    """The shipped registry, plus the entries of `override` (which apply last) if given."""
    return _load(override.resolve() if override else None)


@lru_cache(maxsize=8)
def _load(override: Path | None) -> ModelRegistry:
    shipped = resources.files(__package__).joinpath(SHIPPED).read_text(encoding="utf-8")
    files = [_parse(shipped, origin=f"shared/llm/{SHIPPED}")]
    if override is not None:
        try:
            text = override.read_text(encoding="utf-8")
        except OSError as exc:
            raise LLMNotConfigured(
                f"LLM_MODELS_FILE={override} cannot be read ({exc.strerror}); "
                "point it at a TOML model registry or unset it"
            ) from exc
        files.append(_parse(text, origin=str(override)))
    return ModelRegistry(files)


def _parse(text: str, *, origin: str) -> _File:
    try:
        return _File.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise LLMNotConfigured(f"model registry {origin} is not valid TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise LLMNotConfigured(f"model registry {origin} is invalid — {problems}") from exc
