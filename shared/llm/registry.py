"""The model registry: prices (by time of day), context window and capabilities, by model name.

The shipped table is `models.toml` beside this module (its header explains the format). An
override file (setting `LLM_MODELS_FILE`) adds entries — and peak-hour schedules — that apply
after the shipped ones.
"""

import logging
import re
import tomllib
from datetime import UTC, date, datetime, time
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.db.records import Usage
from shared.llm.errors import LLMNotConfigured
from shared.llm.usage import Price, TokenCounts

log = logging.getLogger(__name__)

ModelRole = Literal["planner", "executor", "any"]


class PeakHours(NamedTuple):
    """When a provider bills its peak rate: weekday windows in its time zone, holidays aside."""

    zone: ZoneInfo
    weekdays: frozenset[int]
    """ISO weekdays (1 = Monday … 7 = Sunday) that have peak windows."""
    windows: tuple[tuple[time, time], ...]
    """Local [start, end) windows of those days."""
    holidays: frozenset[date]
    """Local dates that are off-peak all day."""

    def is_peak(self, when: datetime) -> bool:
        """Whether `when` (an aware datetime) falls in a peak window."""
        local = when.astimezone(self.zone)
        if local.isoweekday() not in self.weekdays or local.date() in self.holidays:
            return False
        clock = local.time().replace(tzinfo=None)
        return any(start <= clock < end for start, end in self.windows)


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
    off_peak_price: _PriceFields | None = None
    peak_hours: str | None = None
    """The name of a `[peak_hours.<name>]` schedule."""
    retired: str | None = None
    replaced_by: str | None = None


class _Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    timezone: str
    weekdays: list[int] = Field(min_length=1)
    hours: list[str] = Field(min_length=1)
    """Local windows, "HH:MM-HH:MM" (end exclusive)."""
    holidays: list[date] = []

    @field_validator("weekdays")
    @classmethod
    def _iso_days(cls, value: list[int]) -> list[int]:
        if not all(1 <= day <= 7 for day in value):
            raise ValueError("weekdays are ISO numbers: 1 (Monday) to 7 (Sunday)")
        return value

    @field_validator("hours")
    @classmethod
    def _windows(cls, value: list[str]) -> list[str]:
        for window in value:
            _window(window)
        return value

    def compile(self, name: str) -> PeakHours:
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"peak_hours.{name}: unknown time zone {self.timezone!r}") from None
        return PeakHours(zone, frozenset(self.weekdays), tuple(_window(w) for w in self.hours),
                         frozenset(self.holidays))  # fmt: skip


def _window(text: str) -> tuple[time, time]:
    try:
        start, end = (time.fromisoformat(part.strip()) for part in text.split("-"))
    except ValueError:
        raise ValueError(f"{text!r} is not a window like 09:00-12:00") from None
    if end <= start:
        raise ValueError(f"{text!r} ends before it starts")
    return start, end


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
    peak_hours: dict[str, _Schedule] = {}


_FALLBACK: dict[str, Any] = {
    "context_window": 8192, "supports_tools": True, "thinking": False, "thinking_toggle": False,
    "role": "any",
}  # fmt: skip


class ModelRegistry:
    """Resolves model names; build one with `load_registry`."""

    def __init__(self, files: list[_File]) -> None:
        self._defaults: dict[str, Any] = dict(_FALLBACK)
        self._entries: list[tuple[re.Pattern[str], _Entry]] = []
        self._schedules: dict[str, PeakHours] = {}
        for file in files:
            self._defaults.update(_set_fields(file.defaults))
            self._entries += [(re.compile(entry.match), entry) for entry in file.model]
            self._schedules |= {name: s.compile(name) for name, s in file.peak_hours.items()}
        named = [self._defaults.get("peak_hours"), *(e.peak_hours for _, e in self._entries)]
        for schedule in named:
            if schedule is not None and schedule not in self._schedules:
                raise ValueError(f"peak_hours = {schedule!r} names no [peak_hours.{schedule}]")
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


def _price(fields: _PriceFields | None) -> Price | None:
    return Price(fields.cache_hit, fields.cache_miss, fields.output) if fields else None


def _set_fields(fields: _Fields) -> dict[str, Any]:
    """The fields an entry sets explicitly (the others inherit)."""
    return {key: getattr(fields, key) for key in fields.model_fields_set if key != "match"}


SHIPPED = "models.toml"


def load_registry(override: Path | None = None) -> ModelRegistry:
    """The shipped registry, plus the entries of `override` (which apply last) if given."""
    return _load(override.resolve() if override else None)


@lru_cache(maxsize=8)
def _load(override: Path | None) -> ModelRegistry:
    # A plain file beside this module (Lambda unpacks the bundle); `importlib.resources`
    # would add ~0.5 ms of imports to every cold start.
    shipped = (Path(__file__).parent / SHIPPED).read_text(encoding="utf-8")
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
    try:
        return ModelRegistry(files)
    except ValueError as exc:
        where = f"{override} or shared/llm/{SHIPPED}" if override else f"shared/llm/{SHIPPED}"
        raise LLMNotConfigured(f"model registry {where} is invalid — {exc}") from exc


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
