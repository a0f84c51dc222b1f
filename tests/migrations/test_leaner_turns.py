"""Leaner turns (revision 5a0c1e2b0704): a deployment's threads move into their runs and back,
and a downgrade writes back every copy the revision stopped keeping."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from local.migrate import downgrade, upgrade
from shared.db.receipts import GONE
from tests.support import databases

BEFORE = "5a0c1e2b0703"
THREAD = (
    "id, session_id, user_id, plan_id, step_id, parent_agent_id, child_agent_id, status, "
    "turn_count, max_turns, error, created_at, completed_at"
)
ROLLED_UP = "SELECT sum(executions), sum(completed), sum(prompt_tokens) FROM "
ROLLED_UP += "parley_private.execution_rollup"


@pytest.fixture
def empty_database(server_url: str) -> Iterator[str]:
    url = databases.create_database(server_url, template=None)
    yield url
    databases.drop_database(server_url, url)


def _rows(url: str, query: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute(query, params).fetchall()


def _turn(conn: psycopg.Connection[Any]) -> dict[str, UUID]:
    """A user's complex turn as revision 0703 stored it: its planner and an executor, a step."""
    ids = {name: uuid4() for name in ("user", "session", "planner", "executor", "message")}
    ids |= {name: uuid4() for name in ("plan", "step")}
    conn.execute("INSERT INTO auth.users (id) VALUES (%(user)s)", ids)
    conn.execute("INSERT INTO chat_sessions (id, user_id) VALUES (%(session)s, %(user)s)", ids)
    conn.execute(
        """INSERT INTO agents (id, user_id, chat_session_id, role, name, model, permissions,
                               token_budget)
           VALUES (%(planner)s, %(user)s, %(session)s, 'planner', 'p', 'pm', 'read_write', 9),
                  (%(executor)s, %(user)s, %(session)s, 'executor', 'e', 'em', 'read_only', 9)""",
        ids,
    )
    conn.execute(
        """INSERT INTO chat_messages (id, session_id, user_id, seq, role, content)
           VALUES (%(message)s, %(session)s, %(user)s, 1, 'user', 'hi')""",
        ids,
    )
    conn.execute(
        """INSERT INTO agent_plans (id, session_id, user_id, user_message_id, planner_agent_id,
                                    strategy, status)
           VALUES (%(plan)s, %(session)s, %(user)s, %(message)s, %(planner)s, 'complex',
                   'completed')""",
        ids,
    )
    conn.execute(
        """INSERT INTO agent_plan_steps (id, plan_id, user_id, step_number, description,
                                         executor_required, status, result)
           VALUES (%(step)s, %(plan)s, %(user)s, 1, 'look', true, 'completed', 'found')""",
        ids,
    )
    return ids


def test_an_upgrade_moves_each_thread_into_its_run_and_a_downgrade_back(
    empty_database: str,
) -> None:
    """A thread with its run becomes that run's (the run takes the thread's id: the dialogue
    keeps pointing at it); one whose run retention deleted becomes a run again, not counted on
    the dashboards; the plan-level run stays as it was. Downgraded, the threads are back."""
    url = empty_database
    upgrade(url, BEFORE)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
        ids |= {name: uuid4() for name in ("thread", "orphan", "run", "planner_run", "said")}
        conn.execute(
            """INSERT INTO agent_chat_sessions (id, session_id, user_id, plan_id, step_id,
                   parent_agent_id, child_agent_id, status, turn_count, max_turns, error,
                   created_at, completed_at)
               VALUES (%(thread)s, %(session)s, %(user)s, %(plan)s, %(step)s, %(planner)s,
                       %(executor)s, 'completed', 3, 6, NULL, '2026-11-01T10:00:00Z',
                       '2026-11-01T10:00:05Z'),
                      (%(orphan)s, %(session)s, %(user)s, %(plan)s, %(step)s, %(planner)s,
                       %(executor)s, 'abandoned', 1, 6, 'the request was cancelled',
                       '2026-11-01T09:00:00Z', '2026-11-01T09:00:01Z')""",
            ids,
        )
        conn.execute(
            """INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
                   agent_session_id, agent_role, model, attempt, status, prompt_tokens,
                   started_at, finished_at, created_at)
               VALUES (%(run)s, %(user)s, %(plan)s, %(step)s, %(executor)s, %(thread)s,
                       'executor', 'em', 2, 'completed', 40, '2026-11-01T10:00:00Z',
                       '2026-11-01T10:00:05Z', '2026-11-01T10:00:00Z'),
                      (%(planner_run)s, %(user)s, %(plan)s, NULL, %(planner)s, NULL,
                       'planner', 'pm', 1, 'completed', 70, '2026-11-01T09:59:00Z',
                       '2026-11-01T10:01:00Z', '2026-11-01T09:59:00Z')""",
            ids,
        )
        conn.execute(
            """INSERT INTO agent_chat_messages (id, agent_session_id, plan_id, session_id,
                   user_id, seq, message_type, content)
               VALUES (%(said)s, %(thread)s, %(plan)s, %(session)s, %(user)s, 2, 'delegation',
                       'look')""",
            ids,
        )
    threads = _rows(url, f"SELECT {THREAD} FROM agent_chat_sessions ORDER BY created_at")
    rolled = _rows(url, ROLLED_UP)

    upgrade(url)

    assert _rows(url, f"SELECT {THREAD} FROM agent_chat_sessions ORDER BY created_at") == threads
    runs = _rows(
        url,
        "SELECT id, agent_session_id, attempt, status, agent_role, prompt_tokens, thread_status "
        "FROM agent_executions ORDER BY created_at",
    )
    orphan, planner_run, run = (ids["orphan"], ids["planner_run"], ids["thread"])
    assert [(r["id"], r["agent_session_id"], r["thread_status"]) for r in runs] == [
        (orphan, orphan, "abandoned"),  # a run again (its own was deleted)
        (planner_run, None, None),  # no thread: as it was
        (run, run, "completed"),  # the thread's id now
    ]
    assert (runs[0]["status"], runs[0]["attempt"], runs[0]["agent_role"]) == (
        "cancelled",
        3,
        "executor",
    )
    assert _rows(url, ROLLED_UP) == rolled  # the revived run was counted when it was written
    joined = "SELECT t.id FROM agent_chat_messages m JOIN agent_chat_sessions t ON t.id = "
    (said,) = _rows(url, joined + "m.agent_session_id")
    assert said["id"] == ids["thread"]

    downgrade(url, BEFORE)

    assert _rows(url, f"SELECT {THREAD} FROM agent_chat_sessions ORDER BY created_at") == threads


def test_a_downgrade_writes_back_the_copies_the_rows_no_longer_hold(empty_database: str) -> None:
    """An accepted plan's call gets its steps again and its result its text; a receipt its
    result, from the row answering its call — or a note when retention deleted that row."""
    url = empty_database
    upgrade(url)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
        calls_of: dict[str, Any] = {"kept": "call_kept", "gone": "call_gone", "hash": bytes(32)}
        function = {"name": "create_plan", "arguments": json.dumps({"goal": "look around"})}
        calls = Jsonb([{"id": "call_plan", "type": "function", "function": function}])
        planned = Jsonb({"kind": "tool_round", "plan_steps": "call_plan"})
        conn.execute(
            """INSERT INTO chat_messages (session_id, user_id, seq, role, content, tool_calls,
                   tool_call_id, tool_name, plan_id, metadata)
               VALUES (%(session)s, %(user)s, 2, 'assistant', '', %(calls)s, NULL, NULL,
                       %(plan)s, %(round)s),
                      (%(session)s, %(user)s, 3, 'tool', '', NULL, 'call_plan', 'create_plan',
                       %(plan)s, '{"kind": "plan_results", "error": null}'),
                      (%(session)s, %(user)s, 4, 'tool', '{"id": 7}', NULL, 'call_kept',
                       'create_task', %(plan)s, '{"kind": "tool_result", "error": null}')""",
            {**ids, "calls": calls, "round": planned},
        )
        conn.execute(
            """INSERT INTO parley_private.tool_call_receipts (plan_id, tool_call_id, call_hash,
                   user_id, tool_name, result, completed_at)
               VALUES (%(plan)s, %(kept)s, %(hash)s, %(user)s, 'create_task', NULL, now()),
                      (%(plan)s, %(gone)s, %(hash)s, %(user)s, 'create_task', NULL, now())""",
            {**ids, **calls_of},
        )

    downgrade(url, BEFORE)

    rows = _rows(
        url,
        "SELECT content, tool_calls, metadata FROM chat_messages WHERE plan_id = %s ORDER BY seq",
        ids["plan"],
    )
    arguments = json.loads(rows[0]["tool_calls"][0]["function"]["arguments"])
    step = {"step_number": 1, "description": "look"}  # executor, no tools: defaults left out
    assert arguments == {"goal": "look around", "steps": [step]}
    assert rows[0]["metadata"] == {"kind": "tool_round"}
    assert rows[1]["content"] == "Step 1: completed\nResult: found"
    receipts = _rows(
        url, "SELECT tool_call_id, result FROM parley_private.tool_call_receipts ORDER BY 1"
    )
    assert receipts == [
        {"tool_call_id": "call_gone", "result": GONE},
        {"tool_call_id": "call_kept", "result": {"id": 7}},
    ]
