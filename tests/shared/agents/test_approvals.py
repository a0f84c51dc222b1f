"""The approval seam: destructive calls and escalations go through `services.approvals`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from local.deepseek import FakeModelServer, reply, tool_call
from shared.agents import ALLOW, WAIT, Escalation, NoApprovals, ToolApproval, Verdict
from shared.db import Database
from shared.dispatch.in_process import InProcessInvoker, run_turn
from tests.shared.agents.test_limits import LOOKUP, ONE_STEP
from tests.support.agent_services import MakeServices
from tests.support.domain_rows import fetch_row, make_event
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import plan_call, synthesis
from tests.support.scripting import Script, requests_of, tool_results
from tests.support.stored_rows import stored, types


class Gate:
    """A gate whose verdicts the test sets, recording what it was asked."""

    def __init__(self, tool: Verdict = ALLOW, escalation: Verdict | None = None) -> None:
        self.tool = tool
        self.escalation = escalation or Verdict("fail")
        self.asked: list[ToolApproval | Escalation] = []

    async def review_tool_call(self, request: ToolApproval) -> Verdict:
        self.asked.append(request)
        return self.tool

    async def review_escalation(self, request: Escalation) -> Verdict:
        self.asked.append(request)
        return self.escalation


async def test_a_destructive_call_waits_for_approval_then_runs_once_on_resume(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    gate = Gate(tool=WAIT)
    services = make_services(gate=gate)
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    script.planner(
        reply(tool_call("delete_calendar_event", event_id=str(event))),
        reply("Deleted the dentist appointment."),
    )
    memory = InMemoryPublisher()

    turn = await run_turn(
        services, user_id=user, session_id=None, message="cancel the dentist", publisher=memory
    )

    assert turn.plan.status == "awaiting_approval" and len(fake.requests) == 1
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is None
    (asked,) = gate.asked
    assert isinstance(asked, ToolApproval) and asked.tool_name == "delete_calendar_event"
    assert types(memory)[-2:] == ["status_update", "done"]
    assert memory.events[-1].data["status"] == "awaiting_approval"

    gate.tool = ALLOW
    resumed = await InProcessInvoker(services, InMemoryPublisher()).run_plan(
        plan_id=turn.started.plan_id
    )

    assert resumed.status == "completed" and len(fake.requests) == 2
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is not None
    rows = await stored(db, turn.started.plan_id)
    assert [m.role for m in rows.messages] == ["user", "assistant", "tool", "assistant"]


async def test_a_denied_destructive_call_is_answered_as_not_approved(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    services = make_services(gate=Gate(tool=Verdict("deny", "keep my appointments")))
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    script.planner(
        reply(tool_call("delete_calendar_event", event_id=str(event))),
        lambda request: reply(tool_results(request)[-1]),
    )

    turn = await run_turn(
        services,
        user_id=user,
        session_id=None,
        message="cancel the dentist",
        publisher=InMemoryPublisher(),
    )

    assert turn.plan.status == "completed"
    assert "Not approved: keep my appointments" in (turn.plan.answer or "")
    assert (await fetch_row(db, "calendar_events", event))["deleted_at"] is None


async def test_an_escalation_fails_its_step_without_approvals_or_is_answered_by_a_gate(
    db: Database, make_services: MakeServices, script: Script, fake: FakeModelServer
) -> None:
    user = await make_user(db)
    script.planner(plan_call(ONE_STEP), synthesis)
    script.step(
        LOOKUP,
        reply(tool_call("escalate", reason="Which project do you mean?")),
        reply(tool_call("complete", result="Tasks of project Apollo")),
    )

    default = make_services(approvals="off")
    assert isinstance(default.approvals, NoApprovals)
    failed = await run_turn(
        default, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    rows = await stored(db, failed.started.plan_id)
    assert rows.steps[0].status == "failed"
    assert rows.steps[0].error == "Escalated to the user: Which project do you mean?"
    assert rows.types_of(1) == ["delegation", "escalation"]
    assert failed.plan.status == "completed"  # the plan goes on and reports the failure

    answering = make_services(gate=Gate(escalation=Verdict("answer", "Project Apollo.")))
    answered = await run_turn(
        answering, user_id=user, session_id=None, message="tasks?", publisher=InMemoryPublisher()
    )
    rows = await stored(db, answered.started.plan_id)
    assert rows.types_of(1) == ["delegation", "escalation", "answer", "completion"]
    assert rows.steps[0].result == "Tasks of project Apollo"
    last = requests_of(fake, "executor")[-1].messages[-1]
    assert last == {
        "role": "tool",
        "tool_call_id": rows.dialogue[rows.thread_of(1).id][1].tool_call_id,
        "content": "Project Apollo.",
    }
