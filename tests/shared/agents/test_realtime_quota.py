"""A turn within the project's Realtime quota: its stream registered and ended, the answer
whole in `done` whatever its batches carried, and the answer's call announced by `done`."""

from __future__ import annotations

import json
from decimal import Decimal

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents.accounting import plan_usage
from shared.agents.event_data import ANSWER_BYTES, whole
from shared.db import Database
from shared.db.records import ChatMessage
from shared.dispatch.in_process import run_turn
from shared.kernel.usage import Usage
from tests.support.agent_services import MakeServices
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.scripting import Script
from tests.support.stored_rows import of_type, stored, streamed_text, types

PACED = {
    "supabase_url": "http://127.0.0.1:9",  # Realtime configured: batches are paced
    "supabase_service_role_key": "sb_secret_test",
    "realtime_quota_per_second": 100,
}
LONG = " ".join(f"Item {n}: water the plants, then the garden." for n in range(300))


def usage(row: ChatMessage) -> dict[str, object]:
    """A stored message's usage, as events carry it (the row keeps the cost to 6 places)."""
    return Usage(
        row.prompt_tokens, row.completion_tokens, row.cache_hit_tokens, row.cost_usd
    ).json()


def rounded(call: object) -> dict[str, object]:
    """An event's call usage with its cost to the row's 6 places."""
    assert isinstance(call, dict)
    return {**call, "cost_usd": format(Decimal(call["cost_usd"]).quantize(Decimal("1e-6")), "f")}


async def test_a_paced_turn_registers_its_stream_and_ends_it(
    db: Database, make_services: MakeServices, script: Script
) -> None:
    services = make_services(**PACED)
    script.planner(reply("Hello! ", "How can I help?"))
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=await make_user(db), session_id=None, message="hi", publisher=memory
    )

    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT ended_at IS NOT NULL AS ended, expires_at <= now() AS expired "
            "FROM parley_private.realtime_streams WHERE plan_id = %s",
            (turn.started.plan_id,),
        )
        assert await cur.fetchone() == {"ended": True, "expired": True}
    assert streamed_text(memory) == "Hello! How can I help?"


async def test_done_carries_the_whole_answer_and_the_call_that_wrote_it(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(**PACED)
    script.planner(reply(*LONG.split(" ")))  # one word a delta: many of them
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=await make_user(db), session_id=None, message="hi", publisher=memory
    )

    rows = await stored(db, turn.started.plan_id)
    (done,) = of_type(memory, "done")
    assert len(rows.answer.content) > 4000  # past what events clip other texts to
    assert done.data["answer"] == rows.answer.content == streamed_text(memory)
    assert of_type(memory, "usage") == []  # the one call wrote the answer: `done` says it
    assert done.data["model"] == rows.answer.model == "test-planner"
    assert rounded(done.data["call"]) == usage(rows.answer)
    assert done.data["call"] == done.data["usage"]  # one call: the plan's totals are its own
    assert types(memory) == ["status_update", "done"]


async def test_every_other_call_still_has_its_usage_event(
    db: Database, make_services: MakeServices, script: Script
) -> None:
    services = make_services(**PACED)
    script.planner(reply("Let me look.", tool_call("list_tasks")), reply("Nothing is due."))
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=await make_user(db), session_id=None, message="due?", publisher=memory
    )

    rows = await stored(db, turn.started.plan_id)
    round_row, answer = rows.messages[1], rows.answer
    (round_usage,) = of_type(memory, "usage")  # the tool round's; the answer's is in `done`
    (done,) = of_type(memory, "done")
    assert rounded(round_usage.data["call"]) == usage(round_row)
    assert rounded(done.data["call"]) == usage(answer)
    assert done.data["usage"] == plan_usage(rows.plan).json()


def test_an_answer_too_long_for_a_broadcast_keeps_its_beginning() -> None:
    text = 'Ünïcode and "quotes"\n' * 20_000  # 420,000 characters; more as JSON
    kept = whole(text)
    assert kept is not None and kept.endswith("…") and text.startswith(kept[:-1])
    size = len(json.dumps(kept, ensure_ascii=False).encode())
    assert ANSWER_BYTES - 10 < size <= ANSWER_BYTES  # as much as fits, and no more
    assert whole(LONG) == LONG and whole(None) is None
