"""The model registry: prices (by time of day), context window and capabilities, by model name.

The shipped table is `models.toml` beside this module (its header explains the format). An
override file (setting `LLM_MODELS_FILE`) adds entries — and peak-hour schedules — that apply
after the shipped ones; it is checked against the format (`registry_file`) when it is loaded,
the shipped one by the test suite.
"""

import logging
import re
import tomllib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import urlsplit

from shared.kernel.errors import ConfigurationError
from shared.kernel.usage import Usage
from shared.llm.errors import LLMNotConfigured
from shared.llm.peak_hours import PeakHours, schedule
from shared.llm.pricing import Price, TokenCounts

if TYPE_CHECKING:
    from shared.kernel.settings import Settings

log = logging.getLogger(__name__)

ModelRole = Literal["planner", "executor", "any"]
RegistryFile = Mapping[str, Any]
"""A registry file's table as TOML reads it (`[defaults]`, `[[model]]`, `[peak_hours.<name>]`):
the shipped one as is, an override file once checked (`registry_file.checked`)."""


class ModelInfo(NamedTuple):
    """What Parley knows about one model name."""

    name: str
    family: str
    """Family of the first matching entry that names one; "unknown" when none matched."""
    known: bool
    """False when no registry entry matched: every field is a fallback default."""
    price: Price | None
    """The standard (peak) rate; None when unknown: calls then cost 0 and
    `Completion.cost_known` is False."""
    context_window: int
    supports_tools: bool
    thinking: bool
    thinking_toggle: bool
    """Accepts DeepSeek's `thinking: {"type": "enabled" | "disabled"}` request field."""
    role: ModelRole
    matched: tuple[str, ...]
    """The patterns that applied, general to specific (for debugging a lookup)."""
    off_peak_price: Price | None = None
    """The rate outside `peak_hours` (None: `price` at all hours)."""
    peak_hours: PeakHours | None = None
    retired: str | None = None
    """When the provider retired the name (requests with it fail); None while it is served."""
    replaced_by: str | None = None
    """The provider's successor to a retired name."""

    def price_at(self, when: datetime) -> Price | None:
        """The rate a call finishing at `when` is billed at (peak or off-peak)."""
        if self.off_peak_price is None or self.peak_hours is None:
            return self.price
        return self.price if self.peak_hours.is_peak(when) else self.off_peak_price

    def usage(self, tokens: TokenCounts, *, at: datetime | None = None) -> Usage:
        """The storable usage of a call to this model that finished `at` (default: now),
        priced from the registry."""
        return tokens.to_usage(self.price_at(at or datetime.now(UTC)))


_FALLBACK: dict[str, Any] = {
    "context_window": 8192,
    "supports_tools": True,
    "thinking": False,
    "thinking_toggle": False,
    "role": "any",
}


class ModelRegistry:
    """Resolves model names; build one with `load_registry`."""

    def __init__(self, files: Sequence[RegistryFile]) -> None:
        self._defaults: dict[str, Any] = dict(_FALLBACK)
        self._entries: list[tuple[re.Pattern[str], RegistryFile]] = []
        self._schedules: dict[str, PeakHours] = {}
        for file in files:
            self._defaults.update(file.get("defaults", {}))
            self._entries += [
                (re.compile(entry["match"]), entry) for entry in file.get("model", [])
            ]
            self._schedules |= {
                name: schedule(name, table) for name, table in file.get("peak_hours", {}).items()
            }
        named = [self._defaults.get("peak_hours"), *(e.get("peak_hours") for _, e in self._entries)]
        for name in named:
            if name is not None and name not in self._schedules:
                raise ValueError(f"peak_hours = {name!r} names no [peak_hours.{name}]")
        self._cache: dict[str, ModelInfo] = {}

    def lookup(self, name: str) -> ModelInfo:
        """The model's info; a clearly marked fallback (`known=False`) for unknown names.

        A `vendor/` prefix (OpenRouter's `deepseek/deepseek-chat`) is ignored when matching.
        """
        if (info := self._cache.get(name)) is None:
            info = self._cache[name] = self._resolve(name)
            if not info.known:
                log.warning(
                    "model %r is not in the registry: price unknown, cost recorded as 0 "
                    "(add it to a file named by LLM_MODELS_FILE)",
                    name,
                )
        return info

    def _resolve(self, name: str) -> ModelInfo:
        bare = name.rsplit("/", 1)[-1]
        fields = dict(self._defaults)
        matched: list[str] = []
        family: str | None = None
        for pattern, entry in self._entries:
            if pattern.fullmatch(bare) or pattern.fullmatch(name):
                fields.update((key, value) for key, value in entry.items() if key != "match")
                matched.append(entry["match"])
                family = family or entry.get("family")
        schedule = fields.get("peak_hours")
        return ModelInfo(
            name=name,
            family=family or "unknown",
            known=bool(matched),
            price=_price(fields.get("price")),
            context_window=fields["context_window"],
            supports_tools=fields["supports_tools"],
            thinking=fields["thinking"],
            thinking_toggle=fields["thinking_toggle"],
            role=fields["role"],
            matched=tuple(matched),
            off_peak_price=_price(fields.get("off_peak_price")),
            peak_hours=self._schedules[schedule] if schedule else None,
            retired=fields.get("retired"),
            replaced_by=fields.get("replaced_by"),
        )


def _price(table: Mapping[str, Any] | None) -> Price | None:
    """A price table; its USD figures are strings in the file (or Decimals, checked), so exact."""
    if not table:
        return None
    return Price(*(Decimal(str(table[key])) for key in ("cache_hit", "cache_miss", "output")))


SHIPPED = "models.toml"


def load_registry(override: Path | None = None) -> ModelRegistry:
    """The shipped registry, plus the entries of `override` (which apply last) if given."""
    return _load(override.resolve() if override else None)


@lru_cache(maxsize=8)
def _load(override: Path | None) -> ModelRegistry:
    # A plain file beside this module (Lambda unpacks the bundle); `importlib.resources`
    # would add ~0.5 ms of imports to every cold start.
    shipped = (Path(__file__).parent / SHIPPED).read_text(encoding="utf-8")
    files = [_read(shipped, origin=f"shared/llm/{SHIPPED}")]  # checked by the suite
    if override is not None:
        try:
            text = override.read_text(encoding="utf-8")
        except OSError as exc:
            raise LLMNotConfigured(
                f"LLM_MODELS_FILE={override} cannot be read ({exc.strerror}); "
                "point it at a TOML model registry or unset it"
            ) from exc
        from shared.llm.registry_file import checked  # pydantic: only for a file of the operator's

        files.append(checked(_read(text, origin=str(override)), origin=str(override)))
    try:
        return ModelRegistry(files)
    except ValueError as exc:
        where = f"{override} or shared/llm/{SHIPPED}" if override else f"shared/llm/{SHIPPED}"
        raise LLMNotConfigured(f"model registry {where} is invalid — {exc}") from exc


def _read(text: str, *, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LLMNotConfigured(f"model registry {origin} is not valid TOML: {exc}") from exc


def refuse_retired_models(settings: "Settings") -> None:
    """Raise `ConfigurationError` for a model name the registry knows to be retired (it would
    fail every turn) — on DeepSeek's own API, which retired it; another endpoint (OpenRouter, a
    proxy, a local server) may still serve the name. Checked when a function reads its
    settings (`shared.services.load_settings`)."""
    if urlsplit(settings.llm_base_url).hostname != "api.deepseek.com":
        return
    registry = load_registry(settings.llm_models_file)
    for variable, name, default in (
        ("LLM_PLANNER_MODEL", settings.llm_planner_model, "deepseek-v4-pro"),
        ("LLM_EXECUTOR_MODEL", settings.llm_executor_model, "deepseek-flash"),
    ):
        info = registry.lookup(name)
        if info.retired is not None:
            successor = f"use {info.replaced_by} (its replacement)" if info.replaced_by else ""
            if info.replaced_by != default:
                successor += f"{' or ' if successor else 'use '}{default} (Parley's default)"
            raise ConfigurationError(
                f"Invalid configuration — {variable}={name} names a model retired on "
                f"{info.retired}: requests with it fail. Set {variable} to a current model: "
                f"{successor}."
            )
