"""`bench.scale` grows a database by copying real turns: the copies hold together.

Grown small (100 turns), the database has every copied turn with its rows, the users and
sessions the layout says, no foreign key pointing nowhere (the copies are written without the
checks), dashboards that add up to the copies, and a bytes-per-turn report over them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest

from bench import scale
from tests.support import databases


@pytest.fixture
def grown(server_url: str, template_name: str) -> Iterator[tuple[str, str]]:
    name = f"parley_test_{os.getpid()}_scale"
    layout = scale.Layout(100, heavy_sessions=10, long_session=10)
    url = scale.prepare(server_url, name, layout, regrow=True, batch=20)
    yield url, name
    databases.drop_database(server_url, url)


def test_a_grown_database_holds_its_copied_turns_together(
    grown: tuple[str, str], server_url: str
) -> None:
    url, name = grown
    with psycopg.connect(url) as conn:
        plans = conn.execute(
            "SELECT strategy, status, count(*) FROM agent_plans GROUP BY 1, 2 ORDER BY 1"
        ).fetchall()
        sessions, users = conn.execute(
            "SELECT count(*), count(DISTINCT user_id) FROM chat_sessions"
        ).fetchone() or (0, 0)
        planners = conn.execute("SELECT count(*) FROM agents WHERE role = 'planner'").fetchone()
        runs = conn.execute("SELECT sum(executions) FROM execution_stats_daily").fetchone()
        executions = conn.execute("SELECT count(*) FROM agent_executions").fetchone()
        days = conn.execute("SELECT count(DISTINCT created_at::date) FROM agent_plans").fetchone()
    # 100 copies, the kinds taking turns (34, 33, 33), and the three seed turns.
    assert plans == [
        ("complex", "completed", 34),
        ("direct", "completed", 35),
        ("tool", "completed", 34),
    ]
    # 80 ordinary turns in sessions of 5 (4 users of 20), 10 sessions of the heavy user, one
    # session of 10 turns, and the seed's three sessions (its user's).
    assert (sessions, users) == (16 + 10 + 1 + 3, 4 + 1 + 1 + 1)
    assert planners == (sessions,)  # one planner a session, whatever its turns
    assert runs == executions and days is not None and days[0] > 10  # spread over months
    assert scale.orphans(scale.admin_url(server_url, name)) == {}
    turns, report = scale.sizes(url)
    assert turns == 103 and "agent_executions" in "\n".join(report)
