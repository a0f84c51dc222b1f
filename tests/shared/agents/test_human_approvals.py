"""The user decides: destructive calls and escalations wait in `agent_approvals` (the default
gate), and a decision resumes the plan in a new `run_plan` — once, whoever invokes it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, RecordedRequest, Reply, reply, tool_call
from shared.agents import TurnOutcome, request_cancel
from shared.agents.approval_gate import DatabaseApprovals, Escalation, Verdict
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from shared.kernel.errors import Conflict, InvalidInput, NotFound
from shared.services import Services
from shared.usecases.approval_decisions import decide_approval, list_approvals
from shared.wire.turns import ApprovalOut
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import fetch_row, make_event
from tests.support.factories import make_user
from tests.support.holds import Hold, as_user, scalar
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import plan_call, synthesis
from tests.support.scripting import Script, requests_of, tool_results
from tests.support.stored_rows import stored

DELETE_STEP = "Delete the dentist appointment"
WHERE = ["planner_loop", "planner_step"]


def delete_plan(event: UUID) -> dict[str, Any]:
    step = {
        "step_number": 1,
        "description": f"{DELETE_STEP} (event {event})",
        "assignee": "planner",
        "tools": ["delete_calendar_event"],
    }
    return {"goal": "Cancel the dentist", "steps": [step]}


def echo(where: str) -> Any:
    """The agent's turn after the delete: it reports the result it was given."""

    def respond(request: RecordedRequest) -> Reply:
        seen = f"Outcome: {tool_results(request)[-1][:600]}"
        return reply(seen) if where == "planner_loop" else reply(tool_call("complete", result=seen))

    return respond


def script_delete(script: Script, where: str, event: UUID, after: Any) -> str:
    """The delete by the planner itself (its tool loop) or in its write step; returns the
    kind of request whose history shows the delete's result."""
    delete = reply(tool_call("delete_calendar_event", event_id=str(event)))
    if where == "planner_loop":
        script.planner(delete, after)
        return "planner"
    script.planner(plan_call(delete_plan(event)), synthesis)
    script.step(DELETE_STEP, delete, after, kind="planner_step")
    return "planner_step"


async def deletes_run(db: Database, plan_id: UUID) -> tuple[int, int]:
    """(calls counted on the plan's executions — a denied one too —, results stored for the
    delete)."""
    calls = await scalar(
        db,
        "SELECT coalesce(sum(tool_call_count), 0) FROM agent_executions WHERE plan_id = %s",
        plan_id,
    )
    results = await scalar(
        db,
        """SELECT (SELECT count(*) FROM chat_messages WHERE plan_id = %s AND role = 'tool'
                     AND tool_name = 'delete_calendar_event')
                + (SELECT count(*) FROM agent_chat_messages m
                     JOIN agent_chat_sessions t ON t.id = m.agent_session_id
                    WHERE t.plan_id = %s AND m.message_type = 'tool_result'
                      AND m.tool_name = 'delete_calendar_event')""",
        plan_id,
        plan_id,
    )
    return int(calls), int(results)


async def start_waiting(
    db: Database, services: Services, script: Script, where: str, after: Any
) -> tuple[UUID, UUID, UUID, str, InMemoryPublisher]:
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    kind = script_delete(script, where, event, after)
    memory = InMemoryPublisher()
    turn = await run_turn(
        services, user_id=user, session_id=None, message="cancel the dentist", publisher=memory
    )
    assert turn.plan.status == "awaiting_approval"
    return user, event, turn.started.plan_id, kind, memory


@pytest.mark.parametrize("where", WHERE)
async def test_a_rejected_delete_does_not_run_and_the_model_is_told(
    db: Database, services: Services, script: Script, fake: FakeModelServer, where: str
) -> None:
    user, event, plan_id, kind, memory = await start_waiting(
        db, services, script, where, echo(where)
    )
    made = len(fake.requests)

    (pending,) = await list_approvals(services, as_user(user), plan_id)
    assert (pending.kind, pending.status, pending.tool_name) == (
        "tool_call",
        "pending",
        "delete_calendar_event",
    )
    assert pending.tool_args == {"event_id": str(event)}
    rows = await stored(db, plan_id)
    assert pending.step_id == (rows.steps[0].id if rows.steps else None)
    assert [s.status for s in rows.steps] == (
        [] if where == "planner_loop" else ["awaiting_approval"]
    )
    waiting = memory.events[-2]
    assert (waiting.type, waiting.data["status"]) == ("status_update", "awaiting_approval")
    # Listed as the approvals routes give them: one type for a client.
    listed = ApprovalOut.model_validate(pending).model_dump(mode="json")
    assert waiting.data["approvals"] == [listed]
    assert listed["tool_args"] == {"event_id": str(event)}

    decided = await decide_approval(
        services,
        as_user(user),
        plan_id=plan_id,
        approval_id=pending.id,
        decision="reject",
        text="I still need it",
    )
    assert (decided.status, decided.response) == ("rejected", "I still need it")
    assert decided.decided_at is not None
    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert resumed.status == "completed"
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is None
    assert await deletes_run(db, plan_id) == (1, 1)  # counted as a call, denied, never run
    told = tool_results(requests_of(fake, kind)[-1])[-1]
    assert "the user rejected this delete_calendar_event call (their reason: I still need it)" in (
        told
    )
    assert "It did not run" in (resumed.answer or "")
    assert len(fake.requests) == made + (1 if where == "planner_loop" else 2)


@pytest.mark.parametrize("where", WHERE)
async def test_an_approved_delete_runs_exactly_once_when_run_plan_is_invoked_twice(
    db: Database, services: Services, script: Script, fake: FakeModelServer, where: str
) -> None:
    hold = Hold(fake)
    user, event, plan_id, kind, _ = await start_waiting(
        db,
        services,
        script,
        where,
        hold(
            reply("Deleted.")
            if where == "planner_loop"
            else reply(tool_call("complete", result="Deleted."))
        ),
    )
    (pending,) = await list_approvals(services, as_user(user), plan_id)
    await decide_approval(
        services, as_user(user), plan_id=plan_id, approval_id=pending.id, decision="approve"
    )
    with pytest.raises(Conflict, match="already decided: approved"):
        await decide_approval(
            services, as_user(user), plan_id=plan_id, approval_id=pending.id, decision="reject"
        )

    first = asyncio.create_task(
        InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)
    )
    await hold.arrived()  # the first invocation deleted the event and is in its next call
    asked = len(fake.requests)
    second = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)
    assert second.running_elsewhere and second.status == "executing"
    assert len(fake.requests) == asked  # the second made no model call
    hold.release()
    outcome = await first
    third = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert outcome.status == "completed" and not outcome.running_elsewhere
    assert (third.status, third.answer, third.running_elsewhere) == (
        "completed",
        outcome.answer,
        False,
    )
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is not None
    assert await deletes_run(db, plan_id) == (1, 1)
    result = tool_results(requests_of(fake, kind)[-1])[-1]
    assert '"deleted":true' in result.replace(" ", "")
    assert await scalar(db, "SELECT count(*) FROM agent_approvals WHERE plan_id = %s", plan_id) == 1


async def test_an_escalation_answered_by_the_user_is_the_executors_result_and_it_goes_on(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(
        LOOKUP,
        reply(tool_call("escalate", reason="Which project do you mean?")),
        reply(tool_call("complete", result="Tasks of project Apollo")),
    )
    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    plan_id = turn.started.plan_id
    assert turn.plan.status == "awaiting_approval"
    (asked,) = await list_approvals(services, as_user(user), plan_id)
    assert (asked.kind, asked.reason, asked.status) == (
        "escalation",
        "Which project do you mean?",
        "pending",
    )
    me = as_user(user)
    with pytest.raises(InvalidInput, match="takes answer or reject"):
        await decide_approval(
            services, me, plan_id=plan_id, approval_id=asked.id, decision="approve"
        )
    with pytest.raises(InvalidInput, match="needs text"):
        await decide_approval(
            services, me, plan_id=plan_id, approval_id=asked.id, decision="answer", text="  "
        )
    stranger = as_user(await make_user(db))
    with pytest.raises(NotFound):
        await list_approvals(services, stranger, plan_id)
    with pytest.raises(NotFound):
        await decide_approval(
            services,
            stranger,
            plan_id=plan_id,
            approval_id=asked.id,
            decision="answer",
            text="Apollo",
        )

    await decide_approval(
        services,
        me,
        plan_id=plan_id,
        approval_id=asked.id,
        decision="answer",
        text="Project Apollo.",
    )
    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)

    assert resumed.status == "completed"
    rows = await stored(db, plan_id)
    assert rows.types_of(1) == ["delegation", "escalation", "answer", "completion"]
    assert rows.steps[0].result == "Tasks of project Apollo"
    executor = requests_of(fake, "executor")
    assert len(executor) == 2  # the escalation was not asked again
    assert executor[-1].messages[-1] == {
        "role": "tool",
        "tool_call_id": asked.tool_call_id,
        "content": "Project Apollo.",
    }
    assert "Tasks of project Apollo" in (resumed.answer or "")


async def test_a_rejected_escalation_fails_its_step_with_the_users_reason(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(LOOKUP, reply(tool_call("escalate", reason="Which project do you mean?")))
    turn = await run_turn(
        services, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    (asked,) = await list_approvals(services, as_user(user), turn.started.plan_id)
    await decide_approval(
        services,
        as_user(user),
        plan_id=turn.started.plan_id,
        approval_id=asked.id,
        decision="reject",
        text="Never mind.",
    )

    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=turn.started.plan_id
    )

    assert resumed.status == "completed"  # the plan reports the failed step
    rows = await stored(db, turn.started.plan_id)
    assert rows.steps[0].status == "failed"
    assert rows.steps[0].error == (
        "Escalated to the user: Which project do you mean? The user declined: Never mind."
    )
    assert len(requests_of(fake, "executor")) == 1


class Signalling(DatabaseApprovals):
    """The real gate, telling the test when an escalation starts waiting."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.waiting = asyncio.Event()

    async def review_escalation(self, request: Escalation) -> Verdict:
        verdict = await super().review_escalation(request)
        if verdict.decision == "wait":
            self.waiting.set()
        return verdict


@dataclass
class TwoSteps:
    """Step 1 escalates (and waits) while step 2 is held mid-call: the plan is still running."""

    services: Services
    user: UUID
    hold: Hold
    turn: asyncio.Task[TurnOutcome]
    plan_id: UUID
    approval_id: UUID


async def two_steps_one_waiting(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> TwoSteps:
    gate = Signalling(db)
    services = make_services(gate=gate)
    user = await make_user(db)
    other = "Search the user's notes about Apollo"
    two_steps = {
        "goal": "Tasks and notes",
        "steps": [
            {
                "step_number": 1,
                "description": LOOKUP,
                "assignee": "executor",
                "tools": ["list_tasks"],
            },
            {
                "step_number": 2,
                "description": other,
                "assignee": "executor",
                "tools": ["search_notes"],
            },
        ],
    }
    hold = Hold(fake)
    script.planner(plan_call(two_steps), synthesis)
    script.step(
        LOOKUP,
        reply(tool_call("escalate", reason="Which project do you mean?")),
        reply(tool_call("complete", result="Tasks of project Apollo")),
    )
    notes = reply(tool_call("search_notes", query="Apollo"))
    script.step(other, hold(notes), reply(tool_call("complete", result="0 notes")))
    turn = asyncio.create_task(
        run_turn(
            services,
            user_id=user,
            session_id=None,
            message="tasks and notes?",
            publisher=InMemoryPublisher(),
        )
    )
    await asyncio.gather(gate.waiting.wait(), hold.arrived())  # step 1 waits, step 2 works
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT id, plan_id FROM agent_approvals WHERE user_id = %s", (user,)
        )
        row = await cur.fetchone()
    assert row is not None
    return TwoSteps(services, user, hold, turn, row["plan_id"], row["id"])


async def test_a_decision_made_while_the_plan_still_runs_is_used_by_the_running_invocation(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    running = await two_steps_one_waiting(db, make_services, script, fake)
    services, plan_id = running.services, running.plan_id
    await decide_approval(
        services,
        as_user(running.user),
        plan_id=plan_id,
        approval_id=running.approval_id,
        decision="answer",
        text="Project Apollo.",
    )
    busy = await InProcessInvoker(services, InMemoryPublisher()).run_plan(plan_id=plan_id)
    assert busy.running_elsewhere  # what the HTTP layer's re-invocation finds
    running.hold.release()
    turn = await running.turn

    assert turn.plan.status == "completed"  # it did not stop to wait for a decided approval
    rows = await stored(db, plan_id)
    assert [s.status for s in rows.steps] == ["completed", "completed"]
    assert rows.steps[0].result == "Tasks of project Apollo"


async def test_a_cancel_asked_while_the_plan_still_runs_ends_it_instead_of_waiting(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    running = await two_steps_one_waiting(db, make_services, script, fake)
    flagged = await request_cancel(running.services, plan_id=running.plan_id, user_id=running.user)
    assert flagged.status == "executing"  # it is running: only flagged
    running.hold.release()
    turn = await running.turn

    assert turn.plan.status == "cancelled"
    (approval,) = await list_approvals(running.services, as_user(running.user), running.plan_id)
    assert approval.status == "cancelled"
    assert len(requests_of(fake, "executor", LOOKUP)) == 1  # the waiting step never went on


async def test_cancelling_a_waiting_plan_closes_it_and_its_approvals_at_once(
    db: Database, services: Services, script: Script, fake: FakeModelServer
) -> None:
    user, event, plan_id, _, _ = await start_waiting(
        db, services, script, "planner_step", echo("planner_step")
    )
    (pending,) = await list_approvals(services, as_user(user), plan_id)

    cancelled = await request_cancel(services, plan_id=plan_id, user_id=user)

    assert cancelled.status == "cancelled"
    (closed,) = await list_approvals(services, as_user(user), plan_id)
    assert closed.status == "cancelled" and closed.decided_at is not None
    rows = await stored(db, plan_id)
    assert [s.status for s in rows.steps] == ["cancelled"]
    with pytest.raises(Conflict):
        await decide_approval(
            services, as_user(user), plan_id=plan_id, approval_id=pending.id, decision="approve"
        )
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is None


@pytest.mark.parametrize("where", WHERE)
async def test_a_rejected_call_is_recorded_and_announced_as_a_permission_denial(
    db: Database, services: Services, script: Script, where: str
) -> None:
    """docs/events.md: a destructive call not approved is a `permission_denied` — its event,
    its dialogue row and a denial counted on the execution, as for a call refused at call
    time (issue 21, defect 5)."""
    user, _, plan_id, _, _ = await start_waiting(db, services, script, where, echo(where))
    (pending,) = await list_approvals(services, as_user(user), plan_id)
    await decide_approval(
        services,
        as_user(user),
        plan_id=plan_id,
        approval_id=pending.id,
        decision="reject",
        text="keep it",
    )
    memory = InMemoryPublisher()
    await InProcessInvoker(services, memory).run_plan(plan_id=plan_id)

    (denied,) = [e for e in memory.events if e.type == "permission_denied"]
    assert denied.data["tool_call_id"] == pending.tool_call_id
    assert "rejected this delete_calendar_event call (their reason: keep it)" in str(
        denied.data["reason"]
    )
    assert denied.data["step_id"] == (str(pending.step_id) if pending.step_id else None)
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT message_type, tool_name, tool_args FROM agent_chat_messages WHERE id = %s",
            (UUID(str(denied.data["message_id"])),),
        )
        row = await cur.fetchone()
    assert row is not None
    assert (row["message_type"], row["tool_name"]) == ("permission_denied", "delete_calendar_event")
    denials = await scalar(
        db, "SELECT sum(permission_denials) FROM agent_executions WHERE plan_id = %s", plan_id
    )
    assert denials == 1
