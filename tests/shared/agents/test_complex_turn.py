"""A complex turn: a validated plan, parallel executors in dialogue with the planner, a planner
write step, and a final answer built from the step results."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from local.deepseek import FakeModelServer
from shared.db import Database
from shared.dispatch.in_process import run_turn
from shared.services import Services
from tests.support.domain_rows import fetch_row, make_event, make_task
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import TASKS_STEP, week_script
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import data, of_type, stored, types

MESSAGE = "Plan my week: my open tasks and my calendar, then add a review task."


async def test_a_complex_turn_runs_the_plan_and_answers_from_both_results(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    await make_task(db, user, title="Write report", status="backlog")
    await make_event(db, user, datetime.now(UTC) + timedelta(hours=2), title="Team sync")
    overlap = week_script(script, fake)
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=user, session_id=None, message=MESSAGE, publisher=memory
    )

    assert script.unscripted == []
    assert overlap.proven  # the second executor's first call arrived while the first was held
    rows = await stored(db, turn.started.plan_id)
    assert (rows.plan.strategy, rows.plan.status, rows.plan.goal) == (
        "complex",
        "completed",
        "Plan the user's week",
    )
    assert [(s.step_number, s.executor_required, s.status) for s in rows.steps] == [
        (1, True, "completed"),
        (2, True, "completed"),
        (3, False, "completed"),
    ]
    assert rows.steps[0].result == "Open tasks: Write report"
    assert rows.steps[1].result == "Events: Team sync"

    planner, *executors = rows.agents
    assert planner.role == "planner" and planner.permissions == "read_write"
    assert [
        (a.role, a.permissions, a.model, a.token_budget, a.allowed_tools) for a in executors
    ] == [
        ("executor", "read_only", "test-executor", 1500, ["list_tasks"]),
        ("executor", "read_only", "test-executor", 1500, ["get_calendar_events"]),
    ] or sorted(a.allowed_tools or [] for a in executors) == [
        ["get_calendar_events"],
        ["list_tasks"],
    ]
    # A tool call's result is stored in the call's own row (`tool_result`, sent by the agent).
    assert rows.types_of(1) == ["delegation", "tool_result", "question", "answer", "completion"]
    assert rows.types_of(2) == ["delegation", "tool_result", "completion"]
    assert rows.types_of(3) == ["delegation", "tool_result", "completion"]
    writer = rows.thread_of(3)
    assert writer.parent_agent_id == writer.child_agent_id == planner.id
    assert all(t.status == "completed" for t in rows.threads)
    answer_row = rows.dialogue[rows.thread_of(1).id][3]
    assert answer_row.sender_agent_id == planner.id and answer_row.content == "No: only open tasks."

    question = requests_of(fake, "answer")[0].messages[-1]["content"]
    assert "Should done tasks count?" in question and MESSAGE in question  # plan context
    after_answer = requests_of(fake, "executor", TASKS_STEP)[2].messages
    assert after_answer[-1] == {
        "role": "tool",
        "tool_call_id": answer_row.tool_call_id,
        "content": "No: only open tasks.",
    }
    write = requests_of(fake, "planner_step")[0].messages[1]["content"]
    assert "Open tasks: Write report" in write and "Events: Team sync" in write

    created = await fetch_row_by_title(db, "Weekly review")
    assert created["user_id"] == user
    assert (
        turn.plan.answer == "Your week. Open tasks: Write report | Events: Team sync | "
        "Created the task Weekly review"
    )

    by_role = {(e.agent_role, e.step_id is None): e for e in rows.executions}
    assert len(rows.executions) == 4
    for run in rows.executions:
        assert run.status == "completed" and run.llm_calls > 0
        assert run.prompt_tokens > 0 and run.completion_tokens > 0 and run.cost_usd > 0
        assert run.started_at and run.finished_at and run.duration_ms is not None
    plan_run = by_role[("planner", True)]
    assert plan_run.llm_calls == 3  # plan, answer to the question, synthesis
    assert sum(e.cost_usd for e in rows.executions) == rows.plan.cost_usd  # each call once

    kinds = types(memory)
    assert kinds[:4] == ["status_update", "tool_call", "plan_created", "status_update"]
    assert kinds.count("step_started") == 3 and kinds.count("step_completed") == 3
    said = [m for thread in rows.dialogue.values() for m in thread]
    answered = [m for m in said if m.message_type == "tool_result" and m.sender_agent_id]
    assert len(answered) == 3  # one row for each step's call and its result: two events
    assert kinds.count("agent_message") == len(said) + len(answered)
    assert kinds[-3:] == ["step_completed", "tool_result", "done"]  # step 3, results, done
    assert kinds.count("done") == 1 and memory.events[-1].type == "done"
    for started in of_type(memory, "step_started"):  # announced before its delegation row
        delegation = next(
            e
            for e in of_type(memory, "agent_message")
            if e.data["step_id"] == started.data["step_id"]
        )
        assert started.seq < delegation.seq
    message_seqs = {e.data["message_id"]: e.seq for e in of_type(memory, "agent_message")}
    for said in rows.dialogue.values():
        assert all(message_seqs[str(m.id)] == m.seq for m in said)
    (created_event,) = of_type(memory, "plan_created")
    assert data(created_event)["steps"][2]["depends_on"] == [1, 2]


async def fetch_row_by_title(db: Database, title: str) -> dict[str, object]:
    async with db.service() as conn:
        cur = await conn.execute("SELECT id FROM tasks WHERE title = %s", (title,))
        row = await cur.fetchone()
    assert row is not None
    return await fetch_row(db, "tasks", row["id"])
