"""Peak hours: when a provider bills its peak rate, from a registry file's
`[peak_hours.<name>]` table."""

from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


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


def schedule(name: str, table: Mapping[str, Any]) -> PeakHours:
    """The `[peak_hours.<name>]` table as a schedule (its windows and time zone checked)."""
    try:
        zone = ZoneInfo(table["timezone"])
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"peak_hours.{name}: unknown time zone {table['timezone']!r}") from None
    windows = tuple(window(text) for text in table["hours"])
    # Dates as the file writes them ("2026-10-01"), or as a checked file holds them.
    holidays = frozenset(date.fromisoformat(str(day)) for day in table.get("holidays", ()))
    return PeakHours(zone, frozenset(table["weekdays"]), windows, holidays)


def window(text: str) -> tuple[time, time]:
    """A local [start, end) window written "HH:MM-HH:MM"."""
    try:
        start, end = (time.fromisoformat(part.strip()) for part in text.split("-"))
    except ValueError:
        raise ValueError(f"{text!r} is not a window like 09:00-12:00") from None
    if end <= start:
        raise ValueError(f"{text!r} ends before it starts")
    return start, end
