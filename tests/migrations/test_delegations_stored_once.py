"""Delegations stored once (revisions 5a0c1e2b0706 and 5a0c1e2b0708): a row stored whole is
read as it is, one stored without its opening is read whole (`session_timeline`), a run's
delegation reads as its thread's first row, and a downgrade writes the whole text back."""

from __future__ import annotations

from uuid import uuid4

import psycopg

from local.migrate import downgrade, upgrade
from tests.migrations.test_leaner_turns import _rows, _turn, empty_database  # noqa: F401

BEFORE = "5a0c1e2b0705"
WHOLE = "Goal of the plan: plan the week\n\nYour step: look\nTools for this step: list_tasks"
TIMELINE = "SELECT content FROM session_timeline WHERE message_id = %s"


def test_a_delegation_without_its_opening_is_read_whole_and_written_back_on_downgrade(
    empty_database: str,  # noqa: F811
) -> None:
    url = empty_database
    upgrade(url, BEFORE)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
        ids |= {name: uuid4() for name in ("run", "old", "new")}
        conn.execute("UPDATE agent_plans SET goal = 'plan the week' WHERE id = %(plan)s", ids)
        conn.execute("UPDATE agent_plan_steps SET tools = '{list_tasks}' WHERE id = %(step)s", ids)
        conn.execute(
            """INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
                   agent_session_id, agent_role, model, attempt, status, turn_count,
                   max_turns, thread_status)
               VALUES (%(run)s, %(user)s, %(plan)s, %(step)s, %(executor)s, %(run)s,
                       'executor', 'em', 1, 'completed', 1, 6, 'completed')""",
            ids,
        )
        conn.execute(
            """INSERT INTO agent_chat_messages (id, agent_session_id, plan_id, session_id,
                   user_id, seq, message_type, content)
               VALUES (%(old)s, %(run)s, %(plan)s, %(session)s, %(user)s, 2, 'delegation',
                       %(whole)s)""",
            ids | {"whole": WHOLE},
        )

    upgrade(url)
    with psycopg.connect(url) as conn:  # as the new code stores it: the rest only
        conn.execute(
            """INSERT INTO agent_chat_messages (id, agent_session_id, plan_id, session_id,
                   user_id, seq, message_type, content)
               VALUES (%(new)s, %(run)s, %(plan)s, %(session)s, %(user)s, 3, 'delegation',
                       E'\\n\\nResult of step 0 (x):\\nfound')""",
            ids,
        )

    rest = "\n\nResult of step 0 (x):\nfound"
    assert _rows(url, TIMELINE, ids["old"]) == [{"content": WHOLE}]  # stored whole: as it is
    assert _rows(url, TIMELINE, ids["new"]) == [{"content": WHOLE + rest}]
    stored = "SELECT content FROM agent_chat_messages WHERE id = %s"
    assert _rows(url, stored, ids["new"]) == [{"content": rest}]

    downgrade(url, BEFORE)

    assert _rows(url, stored, ids["new"]) == [{"content": WHOLE + rest}]
    assert _rows(url, stored, ids["old"]) == [{"content": WHOLE}]
    assert _rows(url, TIMELINE, ids["new"]) == [{"content": WHOLE + rest}]


def test_a_delegation_held_by_its_run_is_written_back_as_a_row_on_downgrade(
    empty_database: str,  # noqa: F811
) -> None:
    """Revision 5a0c1e2b0708: a run's delegation reads as its thread's first row; downgraded,
    it is that row, whole, with the run's id and number."""
    url = empty_database
    upgrade(url)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
        ids["run"] = uuid4()
        conn.execute("UPDATE agent_plans SET goal = 'plan the week' WHERE id = %(plan)s", ids)
        conn.execute("UPDATE agent_plan_steps SET tools = '{list_tasks}' WHERE id = %(step)s", ids)
        conn.execute(
            """INSERT INTO agent_executions (id, user_id, plan_id, step_id, agent_id,
                   agent_session_id, agent_role, model, attempt, status, turn_count,
                   max_turns, thread_status, delegation_seq, delegation_rest)
               VALUES (%(run)s, %(user)s, %(plan)s, %(step)s, %(executor)s, %(run)s,
                       'executor', 'em', 1, 'completed', 1, 6, 'completed', 2,
                       E'\\n\\nResult of step 0 (x):\\nfound')""",
            ids,
        )
    whole = WHOLE + "\n\nResult of step 0 (x):\nfound"
    assert _rows(url, TIMELINE, ids["run"]) == [{"content": whole}]

    downgrade(url, "5a0c1e2b0707")

    stored = "SELECT seq, message_type, content FROM agent_chat_messages WHERE id = %s"
    assert _rows(url, stored, ids["run"]) == [
        {"seq": 2, "message_type": "delegation", "content": whole}
    ]
    upgrade(url)
    assert _rows(url, TIMELINE, ids["run"]) == [{"content": whole}]  # a row now, read as is
