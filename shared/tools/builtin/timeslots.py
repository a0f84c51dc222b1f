"""Calendar arithmetic: occurrences of recurring events, and free slots between busy ones.

Pure functions over aware datetimes. Recurrences keep their wall-clock time in the zone they
are expanded in (the call's zone), so a daily 09:00 stays at 09:00 across a DST change there.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal

RecurrencePattern = Literal["daily", "weekdays", "weekly", "biweekly", "monthly"]

MAX_OCCURRENCES = 1000
"""Expansion cap per event, whatever the window."""

_STEP_DAYS = {"daily": 1, "weekdays": 1, "weekly": 7, "biweekly": 14}


@dataclass(frozen=True, slots=True, order=True)
class Interval:
    """A half-open span of time `[start, end)`."""

    start: datetime
    end: datetime

    def overlaps(self, other: Interval) -> bool:
        return self.start < other.end and other.start < self.end

    @property
    def length(self) -> timedelta:
        return self.end - self.start


def occurrences(
    event: Interval,
    pattern: RecurrencePattern | None,
    *,
    window: Interval,
    zone: tzinfo,
    until: date | None = None,
) -> list[Interval]:
    """The times `event` (first occurrence; repeating by `pattern` up to `until`) meets `window`."""
    if pattern is None:
        return [event] if event.overlaps(window) else []
    found = []
    duration = event.length
    first_day = window.start.astimezone(zone).date()
    for start in _starts(event.start.astimezone(zone), pattern, first_day=first_day):
        if start >= window.end or (until is not None and start.date() > until):
            break
        occurrence = Interval(start, start.astimezone(UTC) + duration)
        if occurrence.overlaps(window):
            found.append(occurrence)
    return found


def _starts(first: datetime, pattern: RecurrencePattern, *, first_day: date) -> Iterator[datetime]:
    """Wall-clock starts from `first` on, skipping ahead to about `first_day`."""
    behind = max(0, (first_day - first.date()).days)
    if pattern == "monthly":
        months_behind = max(0, (first_day.year - first.year) * 12 + first_day.month - first.month)
        for k in range(max(0, months_behind - 1), months_behind + MAX_OCCURRENCES):
            yield _add_months(first, k)
        return
    step = _STEP_DAYS[pattern]
    k0 = max(0, behind // step - 1)
    emitted = 0
    k = k0
    while emitted < MAX_OCCURRENCES:
        start = first + timedelta(days=k * step)  # wall-clock arithmetic in `first`'s zone
        k += 1
        if pattern == "weekdays" and start.weekday() >= 5:
            continue
        emitted += 1
        yield start


def _add_months(value: datetime, months: int) -> datetime:
    year, month = divmod(value.month - 1 + months, 12)
    year += value.year
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def free_slots(
    busy: Iterable[Interval],
    window: Interval,
    *,
    duration: timedelta,
    zone: tzinfo,
    preferred_hours: Iterable[int] | None = None,
) -> list[Interval]:
    """Free spans of at least `duration` in `window`, outside `busy`, within preferred hours.

    `preferred_hours` are hours of the day in `zone` (9 means 09:00–10:00); consecutive hours
    join, so [9, 10, 11] allows 09:00–12:00. None allows the whole window.
    """
    hours = sorted(set(preferred_hours)) if preferred_hours is not None else None
    allowed = [window] if hours is None else _hour_blocks(window, zone, hours)
    free = _subtract(allowed, merge(busy))
    return [span for span in free if span.length >= duration]


def merge(spans: Iterable[Interval]) -> list[Interval]:
    """Sorted, with overlapping or touching spans joined."""
    merged: list[Interval] = []
    for span in sorted(spans):
        if merged and span.start <= merged[-1].end:
            merged[-1] = Interval(merged[-1].start, max(merged[-1].end, span.end))
        else:
            merged.append(span)
    return merged


def _hour_blocks(window: Interval, zone: tzinfo, hours: list[int]) -> list[Interval]:
    day = window.start.astimezone(zone).date() - timedelta(days=1)
    last_day = window.end.astimezone(zone).date()
    blocks = []
    while day <= last_day:
        for hour in hours:
            start = datetime.combine(day, time(hour), tzinfo=zone)
            block = Interval(start, start.astimezone(UTC) + timedelta(hours=1))
            if block.overlaps(window):
                blocks.append(Interval(max(block.start, window.start), min(block.end, window.end)))
        day += timedelta(days=1)
    return merge(blocks)


def _subtract(allowed: list[Interval], busy: list[Interval]) -> list[Interval]:
    free = []
    for span in allowed:
        cursor = span.start
        for taken in busy:
            if taken.end <= cursor or taken.start >= span.end:
                continue
            if taken.start > cursor:
                free.append(Interval(cursor, taken.start))
            cursor = max(cursor, taken.end)
        if cursor < span.end:
            free.append(Interval(cursor, span.end))
    return free
