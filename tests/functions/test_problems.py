"""Problem types (RFC 9457): each kind of error has its own `type` URI and one status, the
OpenAPI documents list them all, and the docs say the statuses the code answers with."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError

import shared.agents.errors
import shared.auth.access_tokens
import shared.db.user_statements
import shared.llm.errors
import shared.usecases.approval_decisions
import shared.usecases.chat_sessions
from functions.agent_executor.app import create_app as executor_app
from functions.agent_planner.app import create_app as planner_app
from functions.chat.app import create_app as chat_app
from shared.api.problems import PROBLEM_TYPE_OF, PROBLEM_TYPES, kind_of, status_of
from shared.kernel.errors import AppError

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "clients" / "js" / "contract"
DOCS = [
    ROOT / "README.md",
    ROOT / "web" / "README.md",
    ROOT / "clients" / "js" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
]
MODULES = (
    shared.agents.errors,
    shared.usecases.approval_decisions,
    shared.auth.access_tokens,
    shared.db.user_statements,
    shared.llm.errors,
    shared.usecases.chat_sessions,
)
"""Where error classes are defined (imported so that every subclass of AppError exists)."""


def every_error_class() -> list[type[AppError]]:
    found: list[type[AppError]] = []
    todo: list[type[AppError]] = [AppError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_the_kinds_have_one_name_each_and_urls_apart() -> None:
    names = [t.name for t in PROBLEM_TYPES]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", name) for name in names)


@pytest.mark.parametrize("cls", every_error_class(), ids=lambda cls: cls.__name__)
def test_every_error_class_answers_with_a_kind_of_its_status(cls: type[AppError]) -> None:
    error = cls.__new__(cls)  # its class decides; no message needed
    assert PROBLEM_TYPE_OF[kind_of(error)].status == status_of(error)


def test_the_two_conflicts_of_a_send_are_told_apart() -> None:
    assert (
        kind_of(
            shared.agents.errors.TurnStillRunning.__new__(shared.agents.errors.TurnStillRunning)
        )
        == "turn-running"
    )
    reused = shared.agents.errors.ClientMessageIdReused.__new__(
        shared.agents.errors.ClientMessageIdReused
    )
    assert (kind_of(reused), status_of(reused)) == ("client-message-id-reused", 422)


async def test_an_invalid_request_is_its_kind() -> None:
    from shared.api.problems import _validation_error

    response = await _validation_error(None, RequestValidationError([]))  # type: ignore[arg-type]
    body = json.loads(bytes(response.body))
    assert body["type"] == PROBLEM_TYPE_OF["invalid-request"].uri


@pytest.mark.parametrize("make", [chat_app, planner_app, executor_app])
def test_every_openapi_document_lists_every_kind_with_its_status(make: Any) -> None:
    listed = make().openapi()["components"]["schemas"]["ProblemType"]["oneOf"]
    kinds = {entry["title"]: (entry["const"], entry.get("x-status")) for entry in listed}
    assert kinds == {t.name: (t.uri, t.status) for t in PROBLEM_TYPES} | {
        "about:blank": ("about:blank", None)
    }


def contract_statuses() -> dict[str, int]:
    """Each kind's status as the committed contract (what the client is generated from) says."""
    document = json.loads((CONTRACT / "chat.json").read_text())
    listed = document["components"]["schemas"]["ProblemType"]["oneOf"]
    return {entry["title"]: entry["x-status"] for entry in listed if "x-status" in entry}


def test_the_problem_table_in_the_docs_is_the_contract() -> None:
    table = (ROOT / "docs" / "problems.md").read_text()
    rows = re.findall(r"^\| `([a-z-]+)` \| (\d{3}) \|", table, flags=re.MULTILINE)
    assert {name: int(status) for name, status in rows} == contract_statuses()


def test_a_status_the_docs_give_a_kind_is_the_status_it_is_answered_with() -> None:
    """Wherever a doc puts a status beside a kind — `409` (`turn-running`), `` `turn-running` ``
    409 — it is that kind's; and every kind is named somewhere with its status."""
    statuses = contract_statuses()
    named: set[str] = set()
    for doc in DOCS:
        text = doc.read_text()
        pairs = [
            (kind, int(status))
            for status, kind in re.findall(r"\b(\d{3})\**\s*\(?`([a-z]+(?:-[a-z]+)+|[a-z]+)`", text)
        ]
        pairs += [
            (kind, int(status))
            for kind, status in re.findall(
                r"`([a-z]+(?:-[a-z]+)+|[a-z]+)`\)?\s*\|?\s*\**(\d{3})\b", text
            )
        ]
        for kind, status in pairs:
            if kind in statuses:
                named.add(kind)
                assert status == statuses[kind], (
                    f"{doc.name}: {kind} is {statuses[kind]}, not {status}"
                )
    assert named == set(statuses)
