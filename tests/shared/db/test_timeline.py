"""Timeline pages find the dialogue through the turns (`shared.db.timeline`): every page is
exactly the next entries of the session in `seq` order — also when an old turn, left waiting
for the user, writes again after newer turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from shared.db import Database, chats
from shared.db.timeline import TIMELINE_PAGE
from tests.support.factories import add_planner, make_user

NOW = datetime.now(UTC)
DAY, HOUR = timedelta(days=1), timedelta(hours=1)
# (seq, what, turn, when): "user" opens a turn, "said" is a dialogue row, "task" a step's
# delegation held by its run, "answer" a chat row.
STORY: list[tuple[int, str, int, timedelta]] = [
    (1, "user", 1, 3 * DAY),
    (2, "said", 1, 3 * DAY),
    (3, "said", 1, 3 * DAY),
    (4, "answer", 1, 3 * DAY),
    (5, "user", 2, 2 * DAY),  # turn 2 waits for the user's approval…
    (6, "said", 2, 2 * DAY),
    (7, "user", 3, HOUR),
    (8, "task", 3, HOUR),  # a step's delegation, held by its run
    (9, "said", 3, HOUR),
    (10, "answer", 3, HOUR),
    (11, "said", 2, HOUR / 2),  # …and goes on after turn 3
    (12, "said", 2, HOUR / 2),
    (13, "answer", 2, HOUR / 2),
    (14, "user", 4, timedelta()),
    (15, "said", 4, timedelta()),
    (16, "answer", 4, timedelta()),
]
ENDED = {1: 3 * DAY, 2: HOUR / 2, 3: HOUR, 4: timedelta()}
COLUMNS = """session_id, seq, source, message_id, kind, sender_role, agent_id,
    agent_session_id AS thread_id, plan_id, content, tool_name, model, prompt_tokens,
    completion_tokens, cost_usd, user_id, created_at"""


async def tell(db: Database, user: UUID) -> UUID:
    """The story's rows, with their numbers and times; the session's id."""
    async with db.service() as conn:
        session = await chats.create_session(conn, user_id=user)
        planner = await add_planner(conn, user, session.id)
        plans: dict[int, UUID] = {}
        for seq, what, turn, ago in STORY:
            at, plan = NOW - ago, plans.get(turn)
            if what == "task":
                cur = await conn.execute(
                    """INSERT INTO agent_plan_steps (plan_id, user_id, step_number, description,
                           executor_required)
                       VALUES (%s, %s, 1, 'look', false) RETURNING id""",
                    (plan, user),
                )
                step = await cur.fetchone()
                assert step is not None
                await conn.execute(
                    """INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
                           agent_session_id, agent_role, model, attempt, status, turn_count,
                           max_turns, thread_status, delegation_seq, created_at)
                       SELECT id, %s, %s, %s, %s, id, 'planner', 'm', 1, 'completed', 0, 1,
                              'completed', %s, %s
                         FROM (SELECT parley_private.new_id() AS id) new""",
                    (user, plan, step["id"], planner.id, seq, at),
                )
                await conn.execute(  # the number was taken from the session's counter
                    "UPDATE chat_sessions SET last_seq = %s WHERE id = %s", (seq, session.id)
                )
                continue
            if what == "said":
                await conn.execute(
                    """INSERT INTO agent_chat_messages (plan_id, session_id, user_id, seq,
                           message_type, content, created_at)
                       VALUES (%s, %s, %s, %s, 'permission_denied', %s, %s)""",
                    (plan, session.id, user, seq, f"said {seq}", at),
                )
                continue
            role = "user" if what == "user" else "assistant"
            cur = await conn.execute(
                """INSERT INTO chat_messages (session_id, user_id, seq, role, content, plan_id,
                       created_at)
                   VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id""",
                (session.id, user, seq, role, f"{what} {seq}", plan, at),
            )
            row = await cur.fetchone()
            assert row is not None
            if what == "user":
                cur = await conn.execute(
                    """INSERT INTO agent_plans (session_id, user_id, user_message_id,
                           planner_agent_id, status, created_at, completed_at)
                       VALUES (%s, %s, %s, %s, 'completed', %s, %s) RETURNING id""",
                    (session.id, user, row["id"], planner.id, at, NOW - ENDED[turn]),
                )
                made = await cur.fetchone()
                assert made is not None
                plans[turn] = made["id"]
        await conn.execute(
            "UPDATE chat_sessions SET last_seq = %s WHERE id = %s", (len(STORY), session.id)
        )
    return session.id


async def page(db: Database, session: UUID, after: int, limit: int) -> list[dict[str, Any]]:
    params = {"session": session, "after": after, "limit": limit}
    async with db.service() as conn:
        cur = await conn.execute(TIMELINE_PAGE, params)
        return list(await cur.fetchall())


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 50])
async def test_every_page_is_the_next_entries_of_the_whole_timeline(
    db: Database, limit: int
) -> None:
    session = await tell(db, await make_user(db))
    async with db.service() as conn:
        cur = await conn.execute(
            f"SELECT {COLUMNS} FROM session_timeline WHERE session_id = %s ORDER BY seq",
            (session,),
        )
        whole = list(await cur.fetchall())
    assert [e["seq"] for e in whole] == [seq for seq, *_ in STORY]

    for after in range(len(STORY) + 1):
        expected = [e for e in whole if e["seq"] > after][:limit]
        assert await page(db, session, after, limit) == expected, (after, limit)

    read, after = [], 0  # paging through, as a client catching up does
    while entries := await page(db, session, after, limit):
        read += entries
        after = entries[-1]["seq"]
    assert read == whole
