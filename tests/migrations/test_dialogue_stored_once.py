"""The dialogue stored once (revision 5a0c1e2b0706): a delegation row stored before is read
as it is, a run's delegation is read as its thread's first message, and a downgrade writes it
back as a row, whole; a receipt's hash is the key `CallKey.of` computes, then hex again."""

from __future__ import annotations

from uuid import uuid4

import psycopg

from local.migrate import downgrade, upgrade
from shared.db.receipts import CallKey
from tests.migrations.test_leaner_turns import _rows, _turn, empty_database  # noqa: F401

BEFORE = "5a0c1e2b0705"
WHOLE = "Goal of the plan: plan the week\n\nYour step: look\nTools for this step: list_tasks"
REST = "\n\nResult of step 0 (x):\nfound"
TIMELINE = "SELECT seq, kind, content FROM session_timeline WHERE message_id = %s"
STORED = "SELECT seq, message_type, content FROM agent_chat_messages WHERE id = %s"
RECEIPT = "SELECT call_hash FROM parley_private.tool_call_receipts WHERE tool_call_id = 'c1'"


def test_delegations_stored_before_and_held_by_runs_read_whole_and_go_back_as_rows(
    empty_database: str,  # noqa: F811
) -> None:
    url = empty_database
    upgrade(url, BEFORE)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
        ids |= {name: uuid4() for name in ("old_run", "run", "old")}
        conn.execute("UPDATE agent_plans SET goal = 'plan the week' WHERE id = %(plan)s", ids)
        conn.execute("UPDATE agent_plan_steps SET tools = '{list_tasks}' WHERE id = %(step)s", ids)
        conn.execute(
            """INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
                   agent_session_id, agent_role, model, attempt, status, turn_count,
                   max_turns, thread_status)
               VALUES (%(old_run)s, %(user)s, %(plan)s, %(step)s, %(executor)s, %(old_run)s,
                       'executor', 'em', 1, 'failed', 1, 6, 'failed')""",
            ids,
        )
        conn.execute(
            """INSERT INTO agent_chat_messages (id, agent_session_id, plan_id, session_id,
                   user_id, seq, message_type, content)
               VALUES (%(old)s, %(old_run)s, %(plan)s, %(session)s, %(user)s, 2, 'delegation',
                       %(whole)s)""",
            ids | {"whole": WHOLE},
        )

    upgrade(url)
    with psycopg.connect(url) as conn:  # as a step attempt opens now: its run holds its task
        conn.execute(
            """INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
                   agent_session_id, agent_role, model, attempt, status, turn_count,
                   max_turns, thread_status, delegation_seq, delegation_rest)
               VALUES (%(run)s, %(user)s, %(plan)s, %(step)s, %(executor)s, %(run)s,
                       'executor', 'em', 2, 'completed', 1, 6, 'completed', 3, %(rest)s)""",
            ids | {"rest": REST},
        )

    assert _rows(url, TIMELINE, ids["old"]) == [{"seq": 2, "kind": "delegation", "content": WHOLE}]
    assert _rows(url, TIMELINE, ids["run"]) == [
        {"seq": 3, "kind": "delegation", "content": WHOLE + REST}
    ]
    assert _rows(url, STORED, ids["run"]) == []  # no row: the run holds it

    downgrade(url, BEFORE)

    assert _rows(url, STORED, ids["old"]) == [
        {"seq": 2, "message_type": "delegation", "content": WHOLE}
    ]
    assert _rows(url, STORED, ids["run"]) == [
        {"seq": 3, "message_type": "delegation", "content": WHOLE + REST}
    ]
    assert _rows(url, TIMELINE, ids["run"]) == [
        {"seq": 3, "kind": "delegation", "content": WHOLE + REST}
    ]


def test_a_receipts_hash_is_its_bytes_after_the_upgrade_and_its_hex_after_a_downgrade(
    empty_database: str,  # noqa: F811
) -> None:
    url = empty_database
    upgrade(url, BEFORE)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
    key = CallKey.of(ids["plan"], "c1", "create_task", '{"title":"x"}')
    with psycopg.connect(url) as conn:
        conn.execute(
            """INSERT INTO parley_private.tool_call_receipts (plan_id, tool_call_id, call_hash,
                   user_id, tool_name) VALUES (%s, 'c1', %s, %s, 'create_task')""",
            (ids["plan"], key.call_hash.hex(), ids["user"]),
        )

    upgrade(url)
    assert _rows(url, RECEIPT) == [{"call_hash": key.call_hash}]
    assert len(key.call_hash) == 32

    downgrade(url, BEFORE)
    assert _rows(url, RECEIPT) == [{"call_hash": key.call_hash.hex()}]
