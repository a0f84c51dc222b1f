"""Row ids are UUIDv7: version 7, RFC 9562's variant, ordered by the millisecond they were made
in (so a turn's index entries land together), random within it."""

from __future__ import annotations

import itertools
import time

import psycopg

from shared.kernel.ids import new_id


def test_ids_are_version_7_and_sort_by_the_time_they_were_made() -> None:
    made = [new_id() for _ in range(5000)]
    stamps = [i.int >> 80 for i in made]  # the milliseconds each was made in
    assert {(i.version, i.variant) for i in made} == {(7, "specified in RFC 4122")}
    assert stamps == sorted(stamps) and len(set(made)) == 5000
    assert abs(stamps[0] - time.time_ns() // 1_000_000) < 60_000  # ms since the epoch
    assert all(a < b for a, b in itertools.pairwise(made) if a.int >> 80 < b.int >> 80)


def test_the_database_defaults_ids_the_same_way(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        made = conn.execute(
            "SELECT parley_private.new_id() FROM generate_series(1, 100)"
        ).fetchall()
        default = conn.execute(
            "SELECT column_default FROM information_schema.columns "
            "WHERE table_name = 'agent_executions' AND column_name = 'id'"
        ).fetchone()
    ids = [row[0] for row in made]
    assert {(i.version, i.variant) for i in ids} == {(7, "specified in RFC 4122")}
    assert abs((ids[0].int >> 80) - time.time_ns() // 1_000_000) < 60_000
    assert len(set(ids)) == 100 and default == ("parley_private.new_id()",)
