"""Base models and value types for tool arguments and outputs.

Time: every datetime a tool accepts or returns is ISO 8601. An argument without an offset is
read in the call's time zone — the `timezone` argument where a tool has one (an IANA name such
as `Europe/Berlin`), otherwise UTC. Every datetime a tool returns carries an offset and is
rendered in that same zone (UTC unless the call named one).
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    field_validator,
)


class ToolArgs(BaseModel):
    """Arguments of a tool: unknown fields are an error, so typos reach the model as such.

    What the model reads about an argument is its `Field(description=...)`. Not an attribute
    docstring: pydantic would read those from the source at import (`use_attribute_docstrings`),
    ~50 ms for the built-in tools on every cold start of the planner and executor."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOutput(BaseModel):
    """What a tool returns to the model (serialised to JSON by the executor)."""

    model_config = ConfigDict(frozen=True)


def display_zone(info: SerializationInfo) -> tzinfo:
    """The zone datetimes are rendered in: the call's zone from the serialisation context."""
    context = info.context if isinstance(info.context, dict) else {}
    zone = context.get("zone")
    return zone if isinstance(zone, tzinfo) else UTC


def _render(value: datetime, info: SerializationInfo) -> str:
    return value.astimezone(display_zone(info)).isoformat()


Instant = Annotated[datetime, PlainSerializer(_render, when_used="json")]
"""A timezone-aware datetime, rendered in the call's display zone."""


def assume_utc(value: datetime) -> datetime:
    """Read a datetime without offset as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


UtcDatetime = Annotated[datetime, AfterValidator(assume_utc)]
"""A datetime argument of a tool without a `timezone` argument: no offset means UTC."""


def zone_named(name: str | None) -> tzinfo:
    """The IANA zone `name`, or UTC when None."""
    if name is None:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}; use an IANA name such as Europe/Berlin"
        ) from None


class ZonedArgs(ToolArgs):
    """Arguments of a tool that reads and renders wall-clock times in a time zone."""

    timezone: str | None = Field(
        default=None,
        max_length=64,
        description="IANA zone (e.g. Europe/Berlin) of times without offset and of the reply; "
        "default UTC.",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        zone_named(value)
        return value

    def zone(self) -> tzinfo:
        """The call's zone (UTC unless given)."""
        return zone_named(self.timezone)

    def aware(self, value: datetime) -> datetime:
        """`value` with the call's zone attached when it came without an offset."""
        return value if value.tzinfo is not None else value.replace(tzinfo=self.zone())


def render_context(args: Any) -> dict[str, tzinfo]:
    """Serialisation context for a tool's output: the display zone of the call."""
    return {"zone": args.zone() if isinstance(args, ZonedArgs) else UTC}
