"""The 21 built-in productivity tools over projects, tasks, notes, brain dumps and the calendar.

12 read, 9 write (one destructive: delete_calendar_event), with the names, parameters and
semantics of the original system's tools (docs/how-to/add-tools.md lists them).
"""

from __future__ import annotations

from typing import Any

from shared.tools.builtin import brain_dumps, calendar, notes, projects, scheduling, tasks
from shared.tools.tool_registry import DatabaseTool, ToolRegistry

ORDER = (
    "list_tasks",
    "search_projects",
    "search_notes",
    "search_brain_dumps",
    "get_task_details",
    "get_project_details",
    "get_note_details",
    "get_brain_dump_details",
    "get_calendar_events",
    "find_available_slots",
    "get_task_calendar_events",
    "check_task_has_calendar_event",
    "create_task",
    "update_task",
    "update_project",
    "create_note",
    "create_brain_dump",
    "schedule_task",
    "update_calendar_event",
    "delete_calendar_event",
    "update_or_schedule_task",
)
"""Offer order: reads, then writes (stable, so prompts stay cacheable)."""


def builtin_tools() -> list[DatabaseTool[Any]]:
    """The built-in tools in offer order."""
    by_name = {
        tool.name: tool
        for family in (tasks, projects, notes, brain_dumps, calendar, scheduling)
        for tool in family.TOOLS
    }
    return [by_name[name] for name in ORDER]


def builtin_registry() -> ToolRegistry:
    """A registry holding the built-in tools (add MCP tools to it afterwards)."""
    return ToolRegistry(builtin_tools())


__all__ = ["builtin_registry", "builtin_tools"]
