"""What the built-in tools return: compact summaries for lists, full records for details.

Field names are the column names, so a row validates straight into its model. Summaries carry
ids, titles, a short preview and counts, and leave out fields that are null (`Compact`); the
`*_details` tools return the full records.
"""

from __future__ import annotations

from datetime import date
from typing import Literal
from uuid import UUID

from shared.tools.builtin.paging import Compact
from shared.tools.values import Instant, ToolOutput

TaskStatus = Literal["backlog", "in_progress", "done", "blocked"]
Priority = Literal["low", "medium", "high"]
TaskType = Literal["one_off", "recurring"]
Recurrence = Literal["daily", "weekdays", "weekly", "biweekly", "monthly"]
ProjectStatus = Literal["active", "paused", "completed", "archived"]
BrainDumpStatus = Literal["pending", "processing", "completed", "failed"]

PREVIEW_CHARS = 200
"""Length of the text previews in list and search results."""


class TaskSummary(Compact):
    id: UUID
    title: str
    status: TaskStatus
    priority: Priority
    start_date: Instant | None
    """Absent: not scheduled."""
    duration_minutes: int
    project_name: str | None = None
    parent_task_id: UUID | None


class Task(ToolOutput):
    id: UUID
    project_id: UUID | None
    parent_task_id: UUID | None
    title: str
    description: str
    details: str
    status: TaskStatus
    priority: Priority
    task_type: TaskType
    duration_minutes: int
    start_date: Instant | None
    recurrence_pattern: Recurrence | None
    recurrence_ends: date | None
    completed_at: Instant | None
    created_at: Instant
    updated_at: Instant


class ProjectSummary(Compact):
    id: UUID
    name: str
    status: ProjectStatus
    preview: str
    """The start of the description (or executive summary)."""
    start_date: date | None
    end_date: date | None
    tags: list[str]
    task_count: int
    active_task_count: int
    """Tasks not done."""
    updated_at: Instant


class Project(ToolOutput):
    id: UUID
    name: str
    description: str
    executive_summary: str
    context: str
    status: ProjectStatus
    start_date: date | None
    end_date: date | None
    tags: list[str]
    created_at: Instant
    updated_at: Instant


class NoteSummary(Compact):
    id: UUID
    title: str
    category: str | None
    project_id: UUID | None
    tags: list[str]
    preview: str
    created_at: Instant


class Note(ToolOutput):
    id: UUID
    project_id: UUID | None
    title: str
    content: str
    category: str | None
    tags: list[str]
    created_at: Instant
    updated_at: Instant


class BrainDumpSummary(Compact):
    id: UUID
    title: str
    status: BrainDumpStatus
    project_id: UUID | None
    preview: str
    created_at: Instant


class BrainDump(ToolOutput):
    id: UUID
    project_id: UUID | None
    title: str
    content: str
    status: BrainDumpStatus
    created_at: Instant
    updated_at: Instant


class CalendarEvent(ToolOutput):
    id: UUID
    task_id: UUID | None
    title: str
    description: str
    start_at: Instant
    end_at: Instant
    recurrence_pattern: Recurrence | None
    deleted_at: Instant | None
    created_at: Instant
    updated_at: Instant


class Occurrence(Compact):
    """One occurrence of an event in a time window (a recurring event has several)."""

    event_id: UUID
    title: str
    start_at: Instant
    end_at: Instant
    task_id: UUID | None
    recurrence_pattern: Recurrence | None
