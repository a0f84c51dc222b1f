"""Demo data: a few projects, tasks, notes, brain dumps and calendar events — for the demo
user, and (locally) for every user who signs up, so their first demo turn has a calendar to act
on.

Ids are derived from the user and the names (uuid5), and every insert skips rows that exist, so
seeding twice leaves exactly the same rows. Event times are anchored to the day of the first
seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from uuid import NAMESPACE_URL, UUID, uuid5

from psycopg import sql

from shared.db import Database
from shared.db.database import Connection
from shared.db.users import ensure_user

DEMO_USER_ID = UUID("0d3a0000-0000-4000-8000-000000000001")
DEMO_EMAIL = "demo@parley.local"
DEMO_PASSWORD = "parley-demo"
"""The demo user's password on the local stack (printed by `dev.py run`; local only)."""
DOMAIN_TABLES = ("projects", "tasks", "notes", "brain_dumps", "calendar_events")


def demo_id(name: str, user_id: UUID = DEMO_USER_ID) -> UUID:
    """A stable id for a named demo row of a user (the demo user's keep their first ids)."""
    owner = "" if user_id == DEMO_USER_ID else f"{user_id}:"
    return uuid5(NAMESPACE_URL, f"parley-demo:{owner}{name}")


PROJECTS = [
    ("launch", "Parley launch", "Ship the open multi-agent chat backend.", "active"),
    ("garden", "Vegetable garden", "Raised beds, watering, a planting calendar.", "active"),
    ("rust", "Learn Rust", "Work through the book and build a CLI.", "paused"),
]
TASKS = [
    ("launch", "Write the README quick start", "done", "high"),
    ("launch", "Record a demo of the planner and executors", "in_progress", "high"),
    ("launch", "Set up dashboards for cost per model", "backlog", "medium"),
    ("launch", "Review RLS policies with a second pair of eyes", "blocked", "high"),
    ("garden", "Build two raised beds", "backlog", "medium"),
    ("garden", "Order tomato and basil seedlings", "backlog", "low"),
    ("rust", "Finish chapter 8: collections", "backlog", "low"),
]
NOTES = [
    ("launch", "Launch checklist", "Docs, demo video, announcement post, dashboards."),
    ("garden", "Soil mix", "One third compost, one third topsoil, one third coarse sand."),
    (None, "Reading list", "Designing Data-Intensive Applications; The Rust Book."),
]
BRAIN_DUMPS = [
    ("launch", "Ideas after standup", "Executors could cache search results per plan."),
    (None, "Weekend", "Fix the bike, call grandma, plant the seedlings if it is warm."),
]
EVENTS = [  # (name, task or None, day offset, hour, duration hours)
    ("Planner/executor demo recording", "Record a demo of the planner and executors", 1, 10, 2),
    ("Team sync", None, 1, 15, 1),
    ("Build raised beds", "Build two raised beds", 3, 9, 3),
    ("Rust study hour", None, 4, 18, 1),
]


@dataclass(frozen=True, slots=True)
class SeedSummary:
    """How many demo rows of each kind exist after seeding."""

    user_id: UUID
    email: str
    counts: dict[str, int]


async def seed_demo(db: Database, *, today: date | None = None) -> SeedSummary:
    """Create the demo user and their data if missing; return what is there."""
    async with db.service() as conn:
        await ensure_user(conn, user_id=DEMO_USER_ID, email=DEMO_EMAIL)
    counts = await seed_user(db, DEMO_USER_ID, today=today)
    return SeedSummary(DEMO_USER_ID, DEMO_EMAIL, counts)


async def seed_user(db: Database, user_id: UUID, *, today: date | None = None) -> dict[str, int]:
    """Give an existing user the demo data (the local stack does, on sign-up: never a deployed
    function); how many rows of each kind they have."""
    start = today or datetime.now(UTC).date()
    async with db.service() as conn:
        await _insert_projects(conn, user_id)
        await _insert_tasks(conn, user_id)
        await _insert_notes_and_dumps(conn, user_id)
        await _insert_events(conn, user_id, start)
        return {table: await _count(conn, table, user_id) for table in DOMAIN_TABLES}


async def _insert_projects(conn: Connection, user: UUID) -> None:
    for key, name, description, status in PROJECTS:
        await conn.execute(
            """INSERT INTO projects (id, user_id, name, description, status)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING""",
            (demo_id(f"project:{key}", user), user, name, description, status),
        )


async def _insert_tasks(conn: Connection, user: UUID) -> None:
    for project, title, status, priority in TASKS:
        await conn.execute(
            """INSERT INTO tasks (id, user_id, project_id, title, status, priority, completed_at)
               VALUES (%s, %s, %s, %s, %s, %s, CASE WHEN %s = 'done' THEN now() END)
               ON CONFLICT (id) DO NOTHING""",
            (
                demo_id(f"task:{title}", user),
                user,
                demo_id(f"project:{project}", user),
                title,
                status,
                priority,
                status,
            ),
        )


async def _insert_notes_and_dumps(conn: Connection, user: UUID) -> None:
    for project, title, content in NOTES:
        await conn.execute(
            """INSERT INTO notes (id, user_id, project_id, title, content)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING""",
            (demo_id(f"note:{title}", user), user, _project(project, user), title, content),
        )
    for project, title, content in BRAIN_DUMPS:
        await conn.execute(
            """INSERT INTO brain_dumps (id, user_id, project_id, title, content)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING""",
            (demo_id(f"dump:{title}", user), user, _project(project, user), title, content),
        )


async def _insert_events(conn: Connection, user: UUID, start: date) -> None:
    for title, task, offset, hour, hours in EVENTS:
        begins = datetime.combine(start + timedelta(days=offset), time(hour), tzinfo=UTC)
        task_id = demo_id(f"task:{task}", user) if task else None
        await conn.execute(
            """INSERT INTO calendar_events (id, user_id, task_id, title, start_at, end_at)
               VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING""",
            (
                demo_id(f"event:{title}", user),
                user,
                task_id,
                title,
                begins,
                begins + timedelta(hours=hours),
            ),
        )


def _project(key: str | None, user: UUID) -> UUID | None:
    return demo_id(f"project:{key}", user) if key else None


async def _count(conn: Connection, table: str, user: UUID) -> int:
    query = sql.SQL("SELECT count(*) AS n FROM {} WHERE user_id = %s").format(sql.Identifier(table))
    cur = await conn.execute(query, (user,))
    row = await cur.fetchone()
    return int(row["n"]) if row else 0
