"""Calendar arithmetic: recurrences and free slots (pure)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from shared.tools.builtin.timeslots import Interval, free_slots, merge, occurrences

BERLIN = ZoneInfo("Europe/Berlin")


def utc(day: int, hour: int, minute: int = 0, month: int = 6) -> datetime:
    return datetime(2030, month, day, hour, minute, tzinfo=UTC)


def hours(spans: list[Interval], zone: object = UTC) -> list[str]:
    return [f"{s.start.astimezone(zone):%d %H:%M}-{s.end.astimezone(zone):%H:%M}" for s in spans]  # type: ignore[arg-type]


def test_a_one_off_event_meets_the_window_or_not() -> None:
    event = Interval(utc(3, 9), utc(3, 10))
    assert occurrences(event, None, window=Interval(utc(3, 9, 30), utc(4, 0)), zone=UTC) == [event]
    assert occurrences(event, None, window=Interval(utc(3, 10), utc(4, 0)), zone=UTC) == []


def test_daily_weekly_and_weekdays_skip_ahead_to_the_window() -> None:
    first = Interval(utc(1, 8), utc(1, 8, 15))  # Saturday 1 June 2030
    window = Interval(utc(3, 0), utc(10, 0))  # Monday 3 to Monday 10
    assert len(occurrences(first, "daily", window=window, zone=UTC)) == 7
    assert hours(occurrences(first, "weekly", window=window, zone=UTC)) == ["08 08:00-08:15"]
    weekdays = occurrences(first, "weekdays", window=window, zone=UTC)
    assert [s.start.day for s in weekdays] == [3, 4, 5, 6, 7]
    assert hours(occurrences(first, "biweekly", window=window, zone=UTC)) == []


def test_a_long_running_daily_event_far_in_the_past_is_cheap_and_correct() -> None:
    first = Interval(datetime(2000, 1, 1, 12, tzinfo=UTC), datetime(2000, 1, 1, 13, tzinfo=UTC))
    found = occurrences(first, "daily", window=Interval(utc(3, 0), utc(4, 0)), zone=UTC)
    assert hours(found) == ["03 12:00-13:00"]


def test_monthly_keeps_the_day_and_clamps_short_months() -> None:
    first = Interval(datetime(2030, 1, 31, 9, tzinfo=UTC), datetime(2030, 1, 31, 10, tzinfo=UTC))
    window = Interval(datetime(2030, 2, 1, tzinfo=UTC), datetime(2030, 4, 1, tzinfo=UTC))
    assert [s.start.date() for s in occurrences(first, "monthly", window=window, zone=UTC)] == [
        date(2030, 2, 28),
        date(2030, 3, 31),
    ]


def test_recurrence_stops_at_its_end_date() -> None:
    first = Interval(utc(3, 9), utc(3, 10))
    found = occurrences(
        first, "daily", window=Interval(utc(3, 0), utc(10, 0)), zone=UTC, until=date(2030, 6, 5)
    )
    assert [s.start.day for s in found] == [3, 4, 5]


def test_recurrences_keep_local_wall_time_across_daylight_saving() -> None:
    # 09:00 in Berlin on Friday 22 March 2030 (CET, UTC+1); DST starts on Sunday 31 March.
    first = Interval(datetime(2030, 3, 22, 8, tzinfo=UTC), datetime(2030, 3, 22, 9, tzinfo=UTC))
    window = Interval(datetime(2030, 3, 29, tzinfo=UTC), datetime(2030, 4, 2, tzinfo=UTC))
    found = occurrences(first, "weekly", window=window, zone=BERLIN)
    assert [s.start.astimezone(UTC).hour for s in found] == [8]  # 29 March, still CET
    later = occurrences(first, "daily", window=window, zone=BERLIN)
    assert {s.start.astimezone(BERLIN).hour for s in later} == {9}
    assert [s.start.astimezone(UTC).hour for s in later] == [8, 8, 7, 7]


def test_free_slots_between_busy_spans() -> None:
    busy = [Interval(utc(3, 10), utc(3, 11)), Interval(utc(3, 10, 30), utc(3, 12))]
    free = free_slots(busy, Interval(utc(3, 9), utc(3, 15)), duration=timedelta(hours=1), zone=UTC)
    assert hours(free) == ["03 09:00-10:00", "03 12:00-15:00"]


def test_free_slots_respect_duration_and_preferred_hours() -> None:
    busy = [Interval(utc(3, 9, 30), utc(3, 10))]
    window = Interval(utc(3, 0), utc(4, 0))
    free = free_slots(
        busy, window, duration=timedelta(minutes=45), zone=UTC, preferred_hours=[9, 10, 14]
    )
    assert hours(free) == ["03 10:00-11:00", "03 14:00-15:00"]


def test_preferred_hours_are_hours_of_the_given_zone() -> None:
    window = Interval(utc(3, 0), utc(4, 0))
    free = free_slots([], window, duration=timedelta(hours=1), zone=BERLIN, preferred_hours=[9])
    assert hours(free, BERLIN) == ["03 09:00-10:00"]
    assert free[0].start == utc(3, 7)


def test_merge_joins_touching_spans() -> None:
    spans = [
        Interval(utc(3, 11), utc(3, 12)),
        Interval(utc(3, 9), utc(3, 10)),
        Interval(utc(3, 10), utc(3, 11)),
    ]
    assert merge(spans) == [Interval(utc(3, 9), utc(3, 12))]
