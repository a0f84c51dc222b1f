"""Events against their served JSON Schema, strictly: what the code sends is what is documented.

The schema the chat function serves (`shared.wire.event_schema`) leaves objects open (clients
ignore keys they do not know). Here every object that lists its properties is closed, so an
event with a key the schema does not document fails as surely as one missing a key.

`check_database_events` holds every event a test database's `realtime.messages` received
(everything but token batches: what Realtime delivers) against it; the test databases run it
before they are dropped (`tests/support/databases.py`), so every event the suite sends is checked.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from functools import cache
from typing import Any

import psycopg
from jsonschema import Draft202012Validator
from psycopg.rows import dict_row

from shared.events import EVENT_TYPES
from shared.wire.event_schema import events_json_schema


def closed(schema: Any) -> Any:
    """`schema` with `additionalProperties: false` on every object schema that has properties."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    tightened = {key: closed(value) for key, value in schema.items()}
    if "properties" in tightened:
        tightened.setdefault("additionalProperties", False)
    return tightened


@cache
def strict_validators() -> dict[str, Draft202012Validator]:
    """One validator per event type (an error then names the key, not "none of the twelve")."""
    schema = closed(copy.deepcopy(events_json_schema()))
    Draft202012Validator.check_schema(schema)
    defs = schema["$defs"]
    return {
        name: Draft202012Validator(
            {"$ref": ref, "$defs": defs}, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        for name, ref in schema["discriminator"]["mapping"].items()
    }


def problems(events: Iterable[dict[str, Any]]) -> list[str]:
    """What is wrong with each event that does not match its schema (empty: all match)."""
    found = []
    for event in events:
        validator = strict_validators().get(str(event.get("type")))
        if validator is None:
            found.append(f"an event of no known type: {event}")
            continue
        for error in validator.iter_errors(event):
            where = "/".join(map(str, error.absolute_path))
            found.append(f"{event.get('type')} seq {event.get('seq')}: {where}: {error.message}")
    return found


def assert_valid(events: Iterable[dict[str, Any]]) -> None:
    wrong = problems(events)
    assert not wrong, "events that do not match their schema:\n" + "\n".join(wrong[:20])


def check_database_events(database_url: str) -> None:
    """Every Parley event the database sent (`realtime.messages`) matches its schema."""
    with psycopg.connect(database_url, row_factory=dict_row, prepare_threshold=None) as conn:
        found = conn.execute(
            """SELECT payload FROM realtime.messages
                WHERE extension = 'broadcast' AND topic LIKE 'session:%%'
                  AND event = ANY(%s) AND payload IS NOT NULL""",
            (list(EVENT_TYPES),),
        ).fetchall()
    assert_valid(row["payload"] for row in found)


def done_data(status: str = "completed") -> dict[str, Any]:
    """A `done` event's data as the schema has it, for tests of the emitting machinery."""
    return {
        "status": status,
        "strategy": None,
        "answer": None,
        "message_id": None,
        "error": None,
        "usage": None,
        "model": None,
        "call": None,
    }
