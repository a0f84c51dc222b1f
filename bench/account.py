"""A realistic account for benchmarks: 12 projects, 60 tasks, 24 calendar events, 20 notes and
8 brain dumps, built from a fixed seed — the same rows (and titles) on every run.

Titles are unique, so "was this item in what the model saw" is a plain text search. Dates are
relative to `start` (the benchmark's day): tasks and events fall in the next two weeks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from uuid import UUID, uuid5

from shared.db import Database
from shared.db.database import Connection

SEED = 20261124
NAMESPACE = UUID("5eed0000-0000-4000-8000-00000000be7c")

PROJECTS = [
    ("Website relaunch", "New marketing site: copy, design system, analytics."),
    ("Vegetable garden", "Raised beds, watering schedule, a planting calendar."),
    ("Kitchen renovation", "New cabinets and worktop; electrician and plumber to book."),
    ("Quarterly report", "Q4 numbers, narrative, board slides."),
    ("Marathon training", "18-week plan towards the spring marathon."),
    ("Learn Rust", "Work through the book and build a small CLI."),
    ("Hiring a designer", "Job post, screening, interviews, offer."),
    ("Family trip to Lisbon", "Flights, apartment, day trips, who feeds the cat."),
    ("Podcast season 2", "Eight episodes: guests, recording, editing, release."),
    ("Home office setup", "Desk, lighting, cabling, a quieter chair."),
    ("Tax return", "Collect receipts, deductions, file before the deadline."),
    ("Open-source library", "Release 1.0: docs, changelog, deprecations."),
]
VERBS = ["Draft", "Review", "Book", "Order", "Plan", "Fix", "Write", "Prepare", "Call", "Update"]
OBJECTS = [
    "the budget sheet",
    "the supplier quote",
    "the kick-off agenda",
    "the photo shoot",
    "the release notes",
    "the checklist",
    "the contract",
    "the onboarding doc",
    "the invoice",
    "the schedule",
    "the risk list",
    "the FAQ page",
    "the demo script",
    "the survey",
    "the reading list",
    "the meeting notes",
    "the shopping list",
    "the test plan",
]
STATUSES = ["backlog"] * 5 + ["in_progress"] * 3 + ["blocked"] + ["done"] * 3
PRIORITIES = ["low", "medium", "medium", "high"]
EVENT_KINDS = [
    "Standup",
    "Design review",
    "Dentist",
    "1:1 with Sam",
    "Gym",
    "Supplier call",
    "Team lunch",
    "Recording session",
    "Planning poker",
    "Yoga",
    "Budget review",
    "Interview",
    "School pickup",
    "Site visit",
    "Writing block",
    "Demo day",
]
NOTE_TOPICS = [
    "decisions",
    "open questions",
    "links",
    "ideas",
    "meeting notes",
    "lessons learned",
    "contacts",
    "numbers",
    "risks",
    "next steps",
]
DUMP_TOPICS = [
    "Sunday evening thoughts",
    "After the offsite",
    "Shower ideas",
    "Things bugging me",
    "Weekend plans",
    "Before the holidays",
    "Train ride notes",
    "Late-night list",
]
FILLER = (
    "Keep it short and concrete; the owner, the date and the next step matter most. "
    "Check with the team before committing and write down what was agreed."
)


@dataclass(frozen=True, slots=True)
class Row:
    """One seeded row as the benchmark needs it: its id, its title and a few fields."""

    id: UUID
    title: str
    fields: dict[str, object] = field(default_factory=dict)


@dataclass(slots=True)
class Account:
    """What was seeded, for building requests and their expected answers."""

    user_id: UUID
    start: datetime
    projects: list[Row] = field(default_factory=list)
    tasks: list[Row] = field(default_factory=list)
    events: list[Row] = field(default_factory=list)
    notes: list[Row] = field(default_factory=list)
    dumps: list[Row] = field(default_factory=list)

    def project(self, name: str) -> Row:
        return next(p for p in self.projects if p.title == name)


def _id(kind: str, n: int) -> UUID:
    return uuid5(NAMESPACE, f"{kind}:{n}")


def build(user_id: UUID, start: datetime) -> Account:
    """The account's rows (deterministic: the seed fixes every choice)."""
    rng = random.Random(SEED)
    account = Account(user_id, start)
    for n, (name, description) in enumerate(PROJECTS):
        status = "paused" if n in (5, 10) else "active"
        account.projects.append(
            Row(_id("project", n), name, {"description": description, "status": status})
        )
    titles: set[str] = set()
    while len(account.tasks) < 60:
        project = rng.choice(account.projects)
        title = f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} ({project.title.split()[0]})"
        if title in titles:
            continue
        titles.add(title)
        status, priority = rng.choice(STATUSES), rng.choice(PRIORITIES)
        scheduled = rng.random() < 0.5
        when = start + timedelta(days=rng.randrange(14), hours=rng.choice((9, 11, 14, 16)))
        account.tasks.append(
            Row(
                _id("task", len(account.tasks)),
                title,
                {
                    "project_id": project.id,
                    "project": project.title,
                    "status": status,
                    "priority": priority,
                    "start_date": when if scheduled else None,
                    "duration": rng.choice((30, 45, 60, 90, 120)),
                },
            )
        )
    for n in range(24):
        kind = EVENT_KINDS[n % len(EVENT_KINDS)]
        day = start + timedelta(days=rng.randrange(14))
        begins = datetime.combine(day.date(), time(rng.choice((8, 10, 13, 15, 17))), tzinfo=UTC)
        account.events.append(
            Row(
                _id("event", n),
                f"{kind} #{n + 1}",
                {"start": begins, "hours": rng.choice((1, 1, 2))},
            )
        )
    for n in range(20):
        project = account.projects[n % len(account.projects)]
        topic = NOTE_TOPICS[n % len(NOTE_TOPICS)]
        account.notes.append(
            Row(_id("note", n), f"{project.title}: {topic}", {"project_id": project.id})
        )
    for n, topic in enumerate(DUMP_TOPICS):
        project = account.projects[(n * 5) % len(account.projects)]
        account.dumps.append(Row(_id("dump", n), topic, {"project_id": project.id}))
    return account


async def seed(db: Database, user_id: UUID, start: datetime) -> Account:
    """Insert the account for `user_id` (an existing user); return what was inserted."""
    account = build(user_id, start)
    async with db.service() as conn:
        await _insert(conn, account)
    return account


async def _insert(conn: Connection, a: Account) -> None:
    for p in a.projects:
        await conn.execute(
            """INSERT INTO projects (id, user_id, name, description, executive_summary, status)
               VALUES (%s, %s, %s, %s, %s, %s)""",
            (p.id, a.user_id, p.title, p.fields["description"], FILLER, p.fields["status"]),
        )
    for t in a.tasks:
        f = t.fields
        await conn.execute(
            """INSERT INTO tasks (id, user_id, project_id, title, description, status, priority,
                                  start_date, duration_minutes, completed_at)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s,
                       CASE WHEN %s = 'done' THEN now() END)""",
            (
                t.id,
                a.user_id,
                f["project_id"],
                t.title,
                FILLER,
                f["status"],
                f["priority"],
                f["start_date"],
                f["duration"],
                f["status"],
            ),
        )
    for e in a.events:
        begins = e.fields["start"]
        assert isinstance(begins, datetime) and isinstance(e.fields["hours"], int)
        await conn.execute(
            """INSERT INTO calendar_events (id, user_id, title, description, start_at, end_at)
               VALUES (%s, %s, %s, %s, %s, %s)""",
            (
                e.id,
                a.user_id,
                e.title,
                "Room 2 / video link in the invite.",
                begins,
                begins + timedelta(hours=e.fields["hours"]),
            ),
        )
    for n in a.notes:
        await conn.execute(
            """INSERT INTO notes (id, user_id, project_id, title, content, category)
               VALUES (%s, %s, %s, %s, %s, 'work')""",
            (n.id, a.user_id, n.fields["project_id"], n.title, f"{n.title}. {FILLER}"),
        )
    for d in a.dumps:
        await conn.execute(
            """INSERT INTO brain_dumps (id, user_id, project_id, title, content)
               VALUES (%s, %s, %s, %s, %s)""",
            (d.id, a.user_id, d.fields["project_id"], d.title, f"{d.title}: {FILLER}"),
        )
