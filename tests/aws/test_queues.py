"""`INVOKER_TRANSPORT=sqs` under moto: a complex plan through queue messages alone.

Chat answers 202 after queueing "run plan"; the planner's invocation queues the executor steps
and returns before any of them ran; each executor's invocation queues "resume plan" when its
step settles; the planner finishes the plan in the invocation of the last resume. Every
message crosses moto's SQS through real boto3 calls and reaches the functions' real handlers
as the SQS event Lambda builds.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.db import Database
from shared.kernel.settings import Settings
from shared.llm.tokens import DeepSeekTokenizer
from shared.services import Services
from tests.functions.conftest import SECRET
from tests.functions.test_handlers import load_event
from tests.support.cloud import Cloud, Function, body_of, lambda_event
from tests.support.domain_rows import make_event, make_task
from tests.support.factories import make_user
from tests.support.holds import plan_row, scalar
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import CALENDAR_STEP, TASKS_STEP, WRITE_STEP, week_script
from tests.support.scripting import Script, requests_of
from tests.support.stored_rows import of_type, stored
from tests.support.user_facing import assert_names_no_setting

Functions = dict[str, Function]
ROOT = Path(__file__).resolve().parents[2]


async def a_user_with_a_week(db: Database) -> UUID:
    user = await make_user(db)
    await make_task(db, user, title="Write report", status="backlog")
    await make_event(db, user, datetime.now(UTC) + timedelta(hours=2), title="Team sync")
    return user


async def send(functions: Functions, user: UUID, **body: Any) -> dict[str, Any]:
    """POST /chat through the chat function's handler (a function URL event)."""
    event = load_event("chat_send_message.json", user)
    if body:
        event["body"] = json.dumps({"message": "Plan my week", **body})
    response = await functions["chat"].invoke(event)
    assert response["statusCode"] == 202, response
    accepted: dict[str, Any] = body_of(response)
    return accepted


def done_events(events: InMemoryPublisher, plan_id: UUID) -> list[Any]:
    return [e for e in of_type(events, "done") if e.plan_id == plan_id]


async def test_a_complex_plan_completes_through_queue_messages_and_no_function_waits(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)

    accepted = await send(functions, user)
    plan_id = UUID(accepted["plan_id"])
    assert accepted["status"] == "pending"
    assert accepted["watch"]["realtime_channel"] == f"session:{accepted['session_id']}"
    assert cloud.bodies("planner") == [{"type": "run_plan", "plan_id": str(plan_id)}]
    assert fake.requests == []  # nothing but storing and queueing happened before the 202

    await cloud.deliver("planner", functions["agent_planner"])

    # The planner's invocation has returned, and no step has run: it did not wait for them.
    handed = await stored(db, plan_id)
    assert (handed.plan.status, handed.plan.strategy) == ("executing", "complex"), handed.plan.error
    assert [s.status for s in handed.steps] == ["pending", "pending", "pending"]
    assert [s.dispatched_at is not None for s in handed.steps] == [True, True, False]
    queued = cloud.bodies("executor")
    assert sorted(m["step_id"] for m in queued) == sorted(str(s.id) for s in handed.steps[:2])
    assert {(m["type"], m["plan_id"], m["attempt"]) for m in queued} == {
        ("run_step", str(plan_id), 1)
    }
    assert requests_of(fake, "executor") == []
    assert (await plan_row(db, plan_id))["lease_owner"] == "parked"  # still counts as running
    assert done_events(events, plan_id) == []

    first = await cloud.deliver("executor", functions["agent_executor"])
    assert first is not None and not first.failed
    assert cloud.bodies("planner") == [
        {"type": "resume_plan", "plan_id": str(plan_id), "step_id": first.body["step_id"]}
    ]
    seen, planner_calls = len(events.events), len(requests_of(fake, "planner"))
    await cloud.deliver("planner", functions["agent_planner"])  # the other step is in flight
    assert len(events.events) == seen and len(requests_of(fake, "planner")) == planner_calls

    await cloud.deliver("executor", functions["agent_executor"])
    await cloud.deliver("planner", functions["agent_planner"])  # write step, then the answer

    assert [cloud.depth(q) for q in ("planner", "executor", "planner_dlq", "executor_dlq")] == [
        0,
        0,
        0,
        0,
    ]
    after = await stored(db, plan_id)
    assert after.plan.status == "completed"
    assert [s.status for s in after.steps] == ["completed", "completed", "completed"]
    assert after.answer.content.startswith("Your week. Open tasks: Write report")
    assert [e.step_id for e in after.executions if e.step_id] == [
        s.id for s in after.steps
    ] or sorted(str(e.step_id) for e in after.executions if e.step_id) == sorted(
        str(s.id) for s in after.steps
    )
    assert after.types_of(1) == [
        "delegation",
        "tool_result",
        "question",
        "answer",
        "completion",
    ]
    assert (
        await scalar(
            db,
            "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
            user,
            "Weekly review",
        )
        == 1
    )
    assert len(done_events(events, plan_id)) == 1
    assert script.unscripted == []
    invocations = {name: f.invocations for name, f in functions.items()}
    assert invocations == {"chat": 1, "agent_planner": 3, "agent_executor": 2}


async def test_a_message_delivered_twice_does_its_work_once(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    plan_id = UUID((await send(functions, user))["plan_id"])
    run_plan = {"type": "run_plan", "plan_id": str(plan_id)}

    await cloud.deliver("planner", functions["agent_planner"])
    cloud.send("planner", run_plan)  # SQS delivers a message again (at least once)
    await cloud.deliver("planner", functions["agent_planner"])
    assert len(cloud.bodies("executor")) == 2  # the steps were not handed over again
    assert len(requests_of(fake, "planner")) == 1

    step = await cloud.deliver("executor", functions["agent_executor"])
    assert step is not None
    marker = (
        TASKS_STEP
        if step.body["step_id"] == str((await stored(db, plan_id)).steps[0].id)
        else CALENDAR_STEP
    )
    calls = len(requests_of(fake, "executor", marker))
    cloud.send("executor", step.body)
    both = [await cloud.deliver("executor", functions["agent_executor"]) for _ in range(2)]
    assert step.body in [d.body for d in both if d is not None and not d.failed]
    assert len(requests_of(fake, "executor", marker)) == calls  # no model call the second time

    await cloud.drain(functions)
    cloud.send("planner", {"type": "resume_plan", "plan_id": str(plan_id)})  # a late resume
    await cloud.drain(functions)

    after = await stored(db, plan_id)
    assert after.plan.status == "completed"
    per_step = [len([e for e in after.executions if e.step_id == s.id]) for s in after.steps]
    assert per_step == [1, 1, 1]
    assert len(requests_of(fake, "planner_step", WRITE_STEP)) == 2
    assert len(done_events(events, plan_id)) == 1  # the late resume did not announce it again
    assert (
        await scalar(
            db,
            "SELECT count(*) FROM tasks WHERE user_id = %s AND title = %s",
            user,
            "Weekly review",
        )
        == 1
    )


async def test_a_message_for_a_plan_that_is_gone_is_dropped(functions: Functions) -> None:
    response = await functions["agent_planner"].invoke(
        lambda_event("agent_planner_sqs_run_plan.json")
    )
    assert response == {"batchItemFailures": []}
    response = await functions["agent_executor"].invoke(
        lambda_event("agent_executor_sqs_run_step.json")
    )
    assert response == {"batchItemFailures": []}


async def test_a_message_that_is_not_parleys_fails_its_delivery(functions: Functions) -> None:
    event = lambda_event("agent_executor_sqs_run_step.json")
    event["Records"][0]["body"] = '{"type": "run_step", "step_id": "not a uuid"}'
    response = await functions["agent_executor"].invoke(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}


async def test_a_step_attempt_out_of_range_fails_its_delivery_before_anything_runs(
    functions: Functions,
) -> None:
    """The executor's route takes attempts 1–20; a message is held to the same (a larger one
    would overflow the attempt column mid-run and be retried until dead-lettered)."""
    event = lambda_event("agent_executor_sqs_run_step.json")
    body = json.loads(event["Records"][0]["body"])
    event["Records"][0]["body"] = json.dumps({**body, "attempt": 2**31})
    response = await functions["agent_executor"].invoke(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}


async def test_each_function_refuses_events_it_is_not_wired_to(functions: Functions) -> None:
    with pytest.raises(ValueError, match="chat cannot handle this event"):
        await functions["chat"].invoke(lambda_event("agent_planner_sqs_run_plan.json"))
    with pytest.raises(ValueError, match="agent_executor cannot handle this event"):
        await functions["agent_executor"].invoke(lambda_event("agent_planner_schedule.json"))
    with pytest.raises(ValueError, match="keys: foo"):
        await functions["agent_planner"].invoke({"foo": 1})


async def test_a_send_that_asks_to_wait_is_refused_before_anything_is_stored(
    db: Database, functions: Functions, cloud: Cloud
) -> None:
    user = await make_user(db)
    for body in ({"wait": True}, {"stream": True}):
        event = load_event("chat_send_message.json", user)
        event["body"] = json.dumps({"message": "Plan my week", **body})
        response = await functions["chat"].invoke(event)
        assert response["statusCode"] == 422
        assert "runs turns through queues" in body_of(response)["detail"]
        assert_names_no_setting(body_of(response)["detail"])
    assert await scalar(db, "SELECT count(*) FROM chat_messages WHERE user_id = %s", user) == 0
    assert cloud.depth("planner") == 0


async def test_a_failed_message_comes_back_after_a_delay_that_grows_with_each_delivery(
    cloud: Cloud, settings: dict[str, Any], tokenizer: DeepSeekTokenizer
) -> None:
    executor = Function(
        "agent_executor",
        Services(Settings(**{**settings, "queue_retry_seconds": 30}), tokens=tokenizer),
    )
    try:
        cloud.send("executor", {"type": "run_step", "step_id": "not a uuid"})
        delivery = await cloud.deliver("executor", executor)
        assert delivery is not None and delivery.failed
        assert cloud.depth("executor") == 1  # still there: it was reported, not deleted
        assert await cloud.deliver("executor", executor) is None  # hidden for 30 s × 1
    finally:
        executor.close()


def request(user: UUID, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """A function URL event (payload v2) for any route, from the committed send event."""
    event = load_event("chat_send_message.json", user)
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["body"] = json.dumps(body or {})
    return event


async def test_a_decision_queues_the_plan_instead_of_running_it_in_the_request(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await make_user(db)
    event = await make_event(db, user, datetime.now(UTC) + timedelta(days=1), title="Dentist")
    script.planner(
        reply(tool_call("delete_calendar_event", event_id=str(event))),
        reply("Deleted the dentist."),
    )
    plan_id = UUID((await send(functions, user, message="cancel the dentist"))["plan_id"])
    await cloud.drain(functions)
    assert (await plan_row(db, plan_id))["status"] == "awaiting_approval"
    listed = body_of(
        await functions["agent_planner"].invoke(request(user, "GET", f"/plans/{plan_id}/approvals"))
    )
    (pending,) = listed["approvals"]

    path = f"/plans/{plan_id}/approvals/{pending['id']}"
    decided = await functions["agent_planner"].invoke(
        request(user, "POST", path, {"decision": "approve"})
    )

    assert decided["statusCode"] == 202  # recorded, and the plan queued: accepted
    assert decided["headers"]["location"].endswith(f"/plans/{plan_id}")
    plan = body_of(decided)["plan"]
    assert (plan["status"], plan["handed_off"]) == ("awaiting_approval", True)
    assert cloud.bodies("planner") == [{"type": "run_plan", "plan_id": str(plan_id)}]
    await cloud.drain(functions)
    assert (await plan_row(db, plan_id))["status"] == "completed"
    assert await scalar(
        db, "SELECT deleted_at IS NOT NULL FROM calendar_events WHERE id = %s", event
    )
    assert len(done_events(events, plan_id)) == 2  # the wait for approval, then the end


async def test_a_cancel_while_the_plan_waits_for_its_queued_steps_ends_it(
    db: Database,
    cloud: Cloud,
    functions: Functions,
    script: Script,
    fake: FakeModelServer,
    events: InMemoryPublisher,
) -> None:
    user = await a_user_with_a_week(db)
    week_script(script, fake, prove_overlap=False)
    plan_id = UUID((await send(functions, user))["plan_id"])
    await cloud.deliver("planner", functions["agent_planner"])  # parked, two steps queued

    cancelled = await functions["agent_planner"].invoke(
        request(user, "POST", f"/plans/{plan_id}/cancel")
    )
    assert cancelled["statusCode"] == 202
    await cloud.drain(functions)

    after = await stored(db, plan_id)
    assert after.plan.status == "cancelled"
    assert [s.status for s in after.steps] == ["cancelled", "cancelled", "cancelled"]
    assert requests_of(fake, "executor") == []
    (done,) = done_events(events, plan_id)
    assert done.data["status"] == "cancelled"


async def test_a_queue_that_cannot_be_reached_is_a_502_and_the_message_is_kept(
    db: Database, cloud: Cloud, settings: dict[str, Any], tokenizer: DeepSeekTokenizer
) -> None:
    missing = cloud.urls["planner"] + "-gone"
    chat = Function(
        "chat", Services(Settings(**{**settings, "planner_queue_url": missing}), tokens=tokenizer)
    )
    try:
        user = await make_user(db)
        response = await chat.invoke(load_event("chat_send_message.json", user))
    finally:
        chat.close()
    assert response["statusCode"] == 502
    assert "planner queue could not be reached (QueueDoesNotExist)" in body_of(response)["detail"]
    assert (
        await scalar(
            db, "SELECT count(*) FROM agent_plans WHERE user_id = %s AND status = 'pending'", user
        )
        == 1
    )


CHAT_PROCESS = """
import json, sys
from functions.chat.handler import handler
before = set(sys.modules)
response = handler(json.loads(sys.argv[1]), None)
print(json.dumps({"response": response, "request_imported": sorted(set(sys.modules) - before),
                  "loaded": sorted(sys.modules)}))
"""


ECHO_SERVER = {
    "name": "echo",
    "command": sys.executable,
    "args": [str(ROOT / "tests" / "support" / "mcp_echo_server.py")],
}
"""A stdio MCP server: were it connected, the chat's process would start it and import the SDK."""


@pytest.mark.parametrize("mcp_servers", [[], [ECHO_SERVER]], ids=["no-mcp", "mcp"])
async def test_the_chat_functions_first_202_imports_neither_boto3_nor_botocore_nor_mcp(
    db: Database, database_url: str, cloud: Cloud, mcp_servers: list[dict[str, Any]]
) -> None:
    """The chat function as deployed, in a process of its own (this one has boto3 and the MCP
    SDK loaded): its handler imported, then its first `POST /chat`, queued and answered 202 —
    with MCP servers configured too: the chat offers no tool, so it loads nothing of MCP's."""
    user = await make_user(db)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SUPABASE_JWT_SECRET": SECRET,
        "INVOKER_TRANSPORT": "sqs",
        "PLANNER_QUEUE_URL": cloud.urls["planner"],
        "EXECUTOR_QUEUE_URL": cloud.urls["executor"],
        "MCP_SERVERS": json.dumps(mcp_servers),
    }
    event = json.dumps(load_event("chat_send_message.json", user))
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CHAT_PROCESS, event],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])

    assert found["response"]["statusCode"] == 202, found["response"]
    plan_id = json.loads(found["response"]["body"])["plan_id"]
    assert cloud.bodies("planner") == [{"type": "run_plan", "plan_id": plan_id}]
    assert "shared.queues.sqs_http" in found["loaded"]  # loaded at init (LambdaHandler.prepare)
    assert "shared.queues.sqs_http" not in found["request_imported"]
    aws_sdk = [name for name in found["loaded"] if name.split(".")[0] in ("boto3", "botocore")]
    assert aws_sdk == []
    mcp = [name for name in found["loaded"] if name.split(".")[0] in ("mcp", "mcp_types")]
    assert mcp == []
    assert "shared.tools.mcp_source" not in found["loaded"]
