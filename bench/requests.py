"""The economics benchmark's requests: what the user asks, which reads answer it, and which of
the seeded account's items a complete answer must rest on.

Each `Lookup` is one read: a plan step for Parley's executors (design A) and one of the
parallel calls of the single agent (design B) — the same tool and arguments both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bench.account import Account, Row

OPEN = ["backlog", "in_progress", "blocked"]


@dataclass(frozen=True, slots=True)
class Lookup:
    description: str
    """The plan step an executor is given (unique across the benchmark)."""
    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Request:
    name: str
    message: str
    lookups: tuple[Lookup, ...]
    expected: Callable[[Account], set[str]]
    """Titles of the items the answer must rest on."""
    judgement: bool = False
    """The answer needs judgement or advice, not only the items gathered (Parley's planner
    then writes it itself; otherwise its plan leaves the answer to the executor model)."""


def _titles(rows: list[Row], keep: Callable[[Row], bool] = lambda row: True) -> set[str]:
    return {row.title for row in rows if keep(row)}


def _open(row: Row) -> bool:
    return row.fields["status"] != "done"


def _in_days(a: Account, days: int) -> Callable[[Row], bool]:
    def keep(row: Row) -> bool:
        start = row.fields["start"]
        assert isinstance(start, datetime)
        return a.start <= start < a.start + timedelta(days=days)

    return keep


def _window(a: Account, days: int) -> dict[str, Any]:
    return {
        "time_min": a.start.isoformat(),
        "time_max": (a.start + timedelta(days=days)).isoformat(),
    }


def requests(a: Account) -> list[Request]:
    """The benchmark's requests over account `a`."""
    web, report = a.project("Website relaunch"), a.project("Quarterly report")
    kitchen = a.project("Kitchen renovation")
    return [
        Request(
            "weekly-review",
            "Weekly review: all my open high-priority tasks, my calendar for the next 7 days "
            "and my notes on the website relaunch.",
            (
                Lookup(
                    "List the open high-priority tasks",
                    "list_tasks",
                    {"priority": ["high"], "status": OPEN, "limit": 50},
                ),
                Lookup(
                    "Get the calendar for the next 7 days",
                    "get_calendar_events",
                    {**_window(a, 7), "limit": 100},
                ),
                Lookup(
                    "Find the notes about the website relaunch",
                    "search_notes",
                    {"query": "Website relaunch", "limit": 20},
                ),
            ),
            lambda a: (
                _titles(a.tasks, lambda t: _open(t) and t.fields["priority"] == "high")
                | _titles(a.events, _in_days(a, 7))
                | _titles(a.notes, lambda n: n.fields["project_id"] == web.id)
            ),
        ),
        Request(
            "all-open-tasks",
            "List every task I still have to do, with its project and status.",
            (
                Lookup(
                    "List every open task with project and status",
                    "list_tasks",
                    {"status": OPEN, "limit": 50},
                ),
            ),
            lambda a: _titles(a.tasks, _open),
        ),
        Request(
            "active-projects",
            "Which of my projects are active, and how many open tasks does each have?",
            (
                Lookup(
                    "List the active projects with their open task counts",
                    "search_projects",
                    {"status": "active", "limit": 20},
                ),
            ),
            lambda a: _titles(a.projects, lambda p: p.fields["status"] == "active"),
        ),
        Request(
            "two-weeks",
            "What is on my calendar over the next 14 days, and which tasks are blocked?",
            (
                Lookup(
                    "Get the calendar for the next 14 days",
                    "get_calendar_events",
                    {**_window(a, 14), "limit": 100},
                ),
                Lookup(
                    "List the blocked tasks", "list_tasks", {"status": ["blocked"], "limit": 50}
                ),
            ),
            lambda a: (
                _titles(a.events, _in_days(a, 14))
                | _titles(a.tasks, lambda t: t.fields["status"] == "blocked")
            ),
        ),
        Request(
            "kitchen",
            "Everything on the kitchen renovation: its tasks, notes and brain dumps.",
            (
                Lookup(
                    "Get the kitchen renovation project with its tasks, notes and brain dumps",
                    "get_project_details",
                    {
                        "project_id": str(kitchen.id),
                        "include_tasks": True,
                        "include_notes": True,
                        "include_brain_dumps": True,
                    },
                ),
            ),
            lambda a: (
                _titles(a.tasks, lambda t: t.fields["project_id"] == kitchen.id)
                | _titles(a.notes, lambda n: n.fields["project_id"] == kitchen.id)
                | _titles(a.dumps, lambda d: d.fields["project_id"] == kitchen.id)
                | {kitchen.title}
            ),
        ),
        Request(
            "unscheduled",
            "Which open tasks have no date yet? I want to plan them this week.",
            (
                Lookup(
                    "List the open tasks without a start date",
                    "list_tasks",
                    {"has_date": False, "status": OPEN, "limit": 50},
                ),
            ),
            lambda a: _titles(a.tasks, lambda t: _open(t) and t.fields["start_date"] is None),
            judgement=True,  # "I want to plan them this week"
        ),
        Request(
            "dumps-and-notes",
            "Go through all my brain dumps and all my notes and tell me what needs attention.",
            (
                Lookup("List all brain dumps", "search_brain_dumps", {"limit": 20}),
                Lookup("List all notes", "search_notes", {"limit": 20}),
            ),
            lambda a: _titles(a.dumps) | _titles(a.notes),
            judgement=True,  # "tell me what needs attention"
        ),
        Request(
            "focus-time",
            "Find free 2-hour slots in working hours next week, and list my tasks in progress.",
            (
                Lookup(
                    "Find free 2-hour slots in working hours next week",
                    "find_available_slots",
                    {
                        **_window(a, 7),
                        "duration_minutes": 120,
                        "preferred_hours": list(range(9, 18)),
                        "limit": 50,
                    },
                ),
                Lookup(
                    "List the tasks in progress",
                    "list_tasks",
                    {"status": ["in_progress"], "limit": 50},
                ),
            ),
            lambda a: _titles(a.tasks, lambda t: t.fields["status"] == "in_progress"),
        ),
        Request(
            "two-projects",
            "For the website relaunch and the quarterly report, list the open tasks of each.",
            (
                Lookup(
                    "List the open tasks of the Website relaunch project",
                    "list_tasks",
                    {"project_id": str(web.id), "status": OPEN, "limit": 50},
                ),
                Lookup(
                    "List the open tasks of the Quarterly report project",
                    "list_tasks",
                    {"project_id": str(report.id), "status": OPEN, "limit": 50},
                ),
            ),
            lambda a: _titles(
                a.tasks, lambda t: _open(t) and t.fields["project_id"] in (web.id, report.id)
            ),
        ),
    ]
