"""The model registry's file format, checked with pydantic: an override file (`LLM_MODELS_FILE`)
is checked when it is loaded; the shipped `models.toml`, which changes only with the code, by
the test suite (`tests/llm/test_registry.py`) — checking it at every cold start cost ~3.5 ms
(five models built, then a validation), and the chat function loads the registry at init."""

import re
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.llm.errors import LLMNotConfigured
from shared.llm.peak_hours import window

ModelRole = Literal["planner", "executor", "any"]


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
        for text in value:
            window(text)
        return value


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


def checked(table: Mapping[str, Any], *, origin: str) -> dict[str, Any]:
    """A registry file's table as TOML read it, checked against the format; what it sets, with
    prices as Decimals and nothing added (an entry inherits what it leaves out)."""
    try:
        return _File.model_validate(table).model_dump(exclude_unset=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise LLMNotConfigured(f"model registry {origin} is invalid — {problems}") from exc
