"""`{{step N}}` in a plan's final answer: the user sees the step's result there — streamed as
the answer arrives, stored, and in `done` — never the placeholder."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents.quotes import Quotes
from shared.db import Database
from shared.db.records import PlanStep
from shared.dispatch.in_process import run_turn
from shared.services import Services
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import plan_call
from tests.support.scripting import Script
from tests.support.stored_rows import stored, streamed_text

ITEMS = "- Renew passport | backlog | high\n- Book dentist | todo"
TEXT = "Here is what I found:\n{{step 1}}\nAnd {{ step 2 }} too; {{step 9}} is no step."
EXPANDED = (
    f"Here is what I found:\n{ITEMS}\nAnd (step 2 failed: no access) too; {{{{step 9}}}} is no "
    "step."
)


def quotes() -> Quotes:
    return Quotes({1: ITEMS, 2: "(step 2 failed: no access)"})


def test_a_placeholder_becomes_the_steps_result_and_an_unknown_one_stays() -> None:
    assert quotes().expand(TEXT) == EXPANDED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11])
def test_a_placeholder_split_across_streamed_pieces_is_shown_expanded(size: int) -> None:
    streaming = quotes()
    pieces = [TEXT[i : i + size] for i in range(0, len(TEXT), size)]

    shown = [streaming.feed(piece) for piece in pieces] + [streaming.end()]

    assert "".join(shown) == EXPANDED
    assert not any("{{step 1" in piece or "{{ step 2" in piece for piece in shown)


def test_braces_that_never_become_a_placeholder_are_shown_as_written() -> None:
    streaming = quotes()
    shown = [streaming.feed(p) for p in ("a {", "{x}} and {", '"k": 1}', " {{ste")]

    assert "".join(shown) + streaming.end() == 'a {{x}} and {"k": 1} {{ste'
    assert shown[0] == "a "  # a brace that may open a placeholder waits for the next piece


async def test_the_final_answer_shows_a_steps_result_where_it_wrote_step_n(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    memory = InMemoryPublisher()
    script.planner(plan_call(ONE_STEP), reply("Here is what I found:\n{{st", "ep 1}}", "\nDone."))
    script.step(LOOKUP, reply(tool_call("complete", result=ITEMS)))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=memory
    )

    expected = f"Here is what I found:\n{ITEMS}\nDone."
    assert turn.plan.answer == expected
    rows = await stored(db, turn.started.plan_id)
    assert rows.answer.content == expected  # stored as the user sees it
    assert streamed_text(memory) == expected
    (done,) = [e for e in memory.events if e.type == "done"]
    assert done.data["answer"] == expected


async def test_a_placeholder_outside_a_plans_answer_is_left_as_written(
    db: Database, services: Services, script: Script
) -> None:
    user = await make_user(db)
    script.planner(reply("Write {{step 1}} in your template."))

    turn = await run_turn(
        services, user_id=user, session_id=None, message="hi", publisher=InMemoryPublisher()
    )

    assert turn.plan.answer == "Write {{step 1}} in your template."  # a direct answer: no plan


def test_a_step_without_a_result_stands_as_what_happened_to_it() -> None:
    now = datetime.now(UTC)
    failed = PlanStep(
        uuid4(),
        uuid4(),
        uuid4(),
        1,
        "Look it up",
        True,
        [],
        [],
        None,
        "failed",
        None,
        "timed out",
        now,
        None,
        None,
        None,
        None,
        None,
    )
    done = failed._replace(step_number=2, status="completed", result="Found it.", error=None)

    assert Quotes.of([failed, done]).expand("{{step 1}}\n{{step 2}}") == (
        "(step 1 failed: timed out)\nFound it."
    )
