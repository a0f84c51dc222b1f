"""Turns over HTTP: POST /chat (JSON and SSE), the planner's and the executor's routes, both
transports, at-least-once redelivery after a crash, and cancellation."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest

from local.deepseek import FakeModelServer, reply, tool_call
from shared.db import Database
from shared.llm.tokens import DeepSeekTokenizer
from tests.functions.test_chat_sessions import problem
from tests.support.domain_rows import make_event
from tests.support.event_check import assert_valid
from tests.support.factories import make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.plan_calls import (
    CALENDAR_STEP,
    TASKS_STEP,
    complete_with_results,
    synthesis,
    week_script,
)
from tests.support.scripting import Script, delegation, requests_of
from tests.support.stack import SERVICE_KEY, Stack
from tests.support.user_facing import assert_names_no_setting

Auth = Callable[[UUID], dict[str, str]]
pytestmark = pytest.mark.usefixtures("script")  # every test starts with a fresh script
SERVICE = {"Authorization": f"Bearer {SERVICE_KEY}"}


@pytest.fixture(scope="module")
def memory() -> InMemoryPublisher:
    return InMemoryPublisher()


@pytest.fixture(scope="module")
def stack(
    database_url: str,
    fake: FakeModelServer,
    models_file: Path,
    tokenizer: DeepSeekTokenizer,
    memory: InMemoryPublisher,
) -> Iterator[Stack]:
    running = Stack(
        database_url=database_url,
        fake=fake,
        models_file=models_file,
        tokenizer=tokenizer,
        sinks=[memory],
    ).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def http_stack(
    database_url: str, fake: FakeModelServer, models_file: Path, tokenizer: DeepSeekTokenizer
) -> Iterator[Stack]:
    running = Stack(
        database_url=database_url,
        fake=fake,
        models_file=models_file,
        tokenizer=tokenizer,
        transport="http",
    ).start()
    yield running
    running.stop()


async def count(db: Database, query: str, *params: object) -> int:
    async with db.service() as conn:
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
    assert row is not None
    return int(next(iter(row.values())))


def parse_sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        event = json.loads(fields["data"])
        assert (int(fields["id"]), fields["event"]) == (event["seq"], event["type"])
        events.append(event)
    return events


def week_plan_with_dependency(script: Script) -> None:
    """Two executor steps, the second after the first, then the answer."""
    plan = {
        "goal": "Look things up",
        "steps": [
            {
                "step_number": 1,
                "description": TASKS_STEP,
                "assignee": "executor",
                "tools": ["list_tasks"],
            },
            {
                "step_number": 2,
                "description": CALENDAR_STEP,
                "assignee": "executor",
                "tools": ["get_calendar_events"],
                "depends_on": [1],
            },
        ],
    }
    script.planner(reply(tool_call("create_plan", **plan)), synthesis)
    # Step 2's delegation quotes step 1, so its rule must come first to be told apart.
    script.step(
        CALENDAR_STEP, reply(tool_call("get_calendar_events")), complete_with_results("Events")
    )
    script.step(TASKS_STEP, reply(tool_call("list_tasks")), complete_with_results("Open tasks"))


async def test_a_direct_turn_answers_in_json(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    user = as_user(await make_user(db))
    script.planner(reply("Hello! How can I help?"))
    sent = await http.post(f"{stack.url('chat')}/chat", json={"message": "Hi"}, headers=user)
    assert sent.status_code == 200, sent.text
    body = sent.json()
    assert (body["status"], body["strategy"], body["answer"]) == (
        "completed",
        "direct",
        "Hello! How can I help?",
    )
    assert body["created"] is True
    listed = await http.get(
        f"{stack.url('chat')}/sessions/{body['session_id']}/messages", headers=user
    )
    roles = [(m["role"], m["content"]) for m in listed.json()["messages"]]
    assert roles == [("user", "Hi"), ("assistant", "Hello! How can I help?")]


async def test_messages_hide_the_planners_internal_rows_unless_asked(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    """Issue 21, defect 7: `GET …/messages` is the conversation — the user's messages and the
    answers; the planner's tool rounds and tool results (e.g. "The plan has finished. Write
    the final answer…") only with `?include=internal`."""
    user = as_user(await make_user(db))
    script.planner(reply(tool_call("create_task", title="Buy milk")), reply("Added it."))
    sent = (
        await http.post(f"{stack.url('chat')}/chat", json={"message": "Add milk"}, headers=user)
    ).json()
    url = f"{stack.url('chat')}/sessions/{sent['session_id']}/messages"
    shown = (await http.get(url, headers=user)).json()
    assert [(m["role"], m["content"]) for m in shown["messages"]] == [
        ("user", "Add milk"),
        ("assistant", "Added it."),
    ]
    everything = (await http.get(f"{url}?include=internal", headers=user)).json()
    assert [m["role"] for m in everything["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert shown["last_seq"] == everything["last_seq"]  # the answer is the last row
    problem(await http.get(f"{url}?include=everything", headers=user), 422)


async def test_sse_of_a_complex_turn_matches_what_the_publishers_saw(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
    memory: InMemoryPublisher,
) -> None:
    user = as_user(await make_user(db))
    week_script(script, fake)
    body = {"message": "Plan my week", "stream": True}
    async with http.stream("POST", f"{stack.url('chat')}/chat", json=body, headers=user) as sent:
        assert sent.status_code == 200
        assert sent.headers["content-type"].startswith("text/event-stream")
        session_id = sent.headers["x-parley-session-id"]
        text = "".join([chunk async for chunk in sent.aiter_text()])
    streamed = parse_sse(text)
    seen = [e.wire() for e in memory.events if str(e.session_id) == session_id]
    assert [(e["type"], e["seq"]) for e in streamed] == [(e["type"], e["seq"]) for e in seen]
    types = [e["type"] for e in streamed]
    assert types.count("done") == 1 and types[-1] == "done"
    assert {"plan_created", "step_started", "agent_message", "step_completed"} <= set(types)
    assert streamed[-1]["data"]["status"] == "completed"
    assert "token" in types
    assert_valid(streamed)  # as GET /schemas/events.json describes them, token batches too


async def test_functions_reach_each_other_over_http(
    http_stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user = as_user(await make_user(db))
    week_plan_with_dependency(script)
    sent = await http.post(
        f"{http_stack.url('chat')}/chat", json={"message": "What is on?"}, headers=user
    )
    assert sent.status_code == 200, sent.text
    assert sent.json()["status"] == "completed"
    assert sent.json()["answer"].startswith("Your week.")
    # The chat function only stored the message and called the planner: it never used a model.
    assert "llm" not in http_stack.services["chat"].__dict__
    assert "llm" not in http_stack.services["agent_planner"].__dict__ or requests_of(
        fake, "executor"
    )
    plan = (
        await http.get(
            f"{http_stack.url('agent_planner')}/plans/{sent.json()['plan_id']}", headers=user
        )
    ).json()
    assert [s["status"] for s in plan["steps"]] == ["completed", "completed"]
    roles = sorted(e["agent_role"] for e in plan["executions"])
    assert roles == ["executor", "executor", "planner"]
    assert all(e["prompt_tokens"] > 0 and float(e["cost_usd"]) > 0 for e in plan["executions"])


async def test_a_planner_that_died_mid_plan_resumes_without_redoing_step_one(
    http_stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user_id = await make_user(db)
    user = as_user(user_id)
    week_plan_with_dependency(script)
    steps_run: list[str] = []

    def step_two_unreachable(scope: MutableMapping[str, Any]) -> bool:
        steps_run.append(scope["path"])
        return len(steps_run) == 2  # the executor function is down when step 2 is sent

    http_stack.executor_faults.fault = step_two_unreachable
    body = {"message": "What is on?", "client_message_id": "resume-1"}
    try:
        first = await http.post(f"{http_stack.url('chat')}/chat", json=body, headers=user)
    finally:
        http_stack.executor_faults.fault = None
    problem(first, 502)
    # Step 2's delegation quotes step 1's description: count step 1's own requests only.
    step_one = [
        r for r in requests_of(fake, "executor", TASKS_STEP) if CALENDAR_STEP not in delegation(r)
    ]
    tasks_calls = len(step_one)
    assert tasks_calls == 2 and requests_of(fake, "executor", CALENDAR_STEP) == []

    again = await http.post(f"{http_stack.url('chat')}/chat", json=body, headers=user)
    assert again.status_code == 200, again.text
    assert (again.json()["created"], again.json()["status"]) == (False, "completed")
    step_one = [
        r for r in requests_of(fake, "executor", TASKS_STEP) if CALENDAR_STEP not in delegation(r)
    ]
    assert len(step_one) == tasks_calls  # step 1 not redone
    assert len(requests_of(fake, "executor", CALENDAR_STEP)) == 2
    assert (
        await count(
            db, "SELECT count(*) FROM chat_messages WHERE user_id = %s AND role = 'user'", user_id
        )
        == 1
    )


async def test_cancel_mid_plan_stops_the_model_calls(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user_id = await make_user(db)
    user = as_user(user_id)
    arrived = threading.Event()

    def hold(request: Any) -> Any:
        arrived.set()
        return reply(tool_call("list_tasks")).stalled(after=0)

    script.planner(
        reply(
            tool_call(
                "create_plan",
                goal="g",
                steps=[
                    {
                        "step_number": 1,
                        "description": TASKS_STEP,
                        "assignee": "executor",
                        "tools": ["list_tasks"],
                    }
                ],
            )
        ),
    )
    script.step(TASKS_STEP, hold)
    chat = asyncio.create_task(
        http.post(f"{stack.url('chat')}/chat", json={"message": "Go"}, headers=user)
    )
    assert await asyncio.to_thread(arrived.wait, 10)  # the executor's call is being held
    plan_id = await latest_plan(db, user_id)
    cancelled = await http.post(
        f"{stack.url('agent_planner')}/plans/{plan_id}/cancel", headers=user
    )
    assert cancelled.status_code == 202 and cancelled.json()["cancel_requested"] is True
    calls_at_flag = len(fake.requests)
    fake.release()
    result = (await chat).json()
    assert result["status"] == "cancelled"
    assert len(fake.requests) == calls_at_flag  # nothing asked of the model after the flag


async def latest_plan(db: Database, user_id: UUID) -> UUID:
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT id FROM agent_plans WHERE user_id = %s ORDER BY created_at DESC LIMIT 1",
            (user_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    return UUID(str(row["id"]))


async def test_chat_refuses_bad_requests(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    url = f"{stack.url('chat')}/chat"
    user = as_user(await make_user(db))
    problem(await http.post(url, json={"message": "Hi"}), 401)
    problem(await http.post(url, json={"message": ""}, headers=user), 422)
    problem(await http.post(url, json={"message": "Hi", "mode": "x"}, headers=user), 422)
    problem(await http.post(url, json={"message": "x" * 32_001}, headers=user), 422)
    stranger = {"message": "Hi", "session_id": str(uuid4())}
    problem(await http.post(url, json=stranger, headers=user), 404)


async def test_a_message_is_refused_unless_the_planners_budget_can_take_it(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    """Issue 21, defect 4: 32,000 × "é" was accepted, then failed every time for want of
    budget; a message is measured in tokens when it is sent (half the planner's budget)."""
    user_id = await make_user(db)
    user, url = as_user(user_id), f"{stack.url('chat')}/chat"
    refused = problem(await http.post(url, json={"message": "é" * 32_000}, headers=user), 422)
    detail = str(refused["detail"])
    assert "tokens" in detail and "12000" in detail
    assert_names_no_setting(detail)
    stored = "SELECT count(*) FROM chat_messages WHERE user_id = %s"
    assert await count(db, stored, user_id) == 0  # refused before anything was stored
    script.planner(reply("Read it all."))
    taken = await http.post(url, json={"message": "é" * 11_000}, headers=user)
    assert taken.status_code == 200 and taken.json()["status"] == "completed", taken.text


async def test_internal_routes_need_the_service_key(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth
) -> None:
    user = as_user(await make_user(db))
    run = f"{stack.url('agent_planner')}/plans/{uuid4()}/run"
    step = f"{stack.url('agent_executor')}/steps/{uuid4()}/run"
    for url in (run, step):
        problem(await http.post(url, json={}), 401)
        problem(await http.post(url, json={}, headers=user), 403)
        problem(await http.post(url, json={}, headers=SERVICE), 404)
    problem(await http.post(step, json={"attempt": 0}, headers=SERVICE), 422)


async def test_running_an_unknown_plan_is_404_also_when_streamed(
    stack: Stack, http: httpx.AsyncClient
) -> None:
    run = f"{stack.url('agent_planner')}/plans/{uuid4()}/run?stream=true"
    problem(await http.post(run, headers=SERVICE), 404)


async def test_finished_plans_and_steps_are_redelivered_without_model_calls(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user = as_user(await make_user(db))
    week_plan_with_dependency(script)
    sent = await http.post(f"{stack.url('chat')}/chat", json={"message": "?"}, headers=user)
    plan_id = sent.json()["plan_id"]
    detail = (await http.get(f"{stack.url('agent_planner')}/plans/{plan_id}", headers=user)).json()
    before = len(fake.requests)
    rerun = await http.post(f"{stack.url('agent_planner')}/plans/{plan_id}/run", headers=SERVICE)
    assert rerun.status_code == 200 and rerun.json()["status"] == "completed"
    assert rerun.json()["answer"] == sent.json()["answer"]
    step_id = detail["steps"][0]["id"]
    again = await http.post(
        f"{stack.url('agent_executor')}/steps/{step_id}/run", json={"attempt": 1}, headers=SERVICE
    )
    assert again.status_code == 200 and again.json()["status"] == "completed"
    assert len(fake.requests) == before


async def test_a_sessions_plans_are_read_in_full_in_one_call_and_paged(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user_id = await make_user(db)
    user, chat, planner = as_user(user_id), stack.url("chat"), stack.url("agent_planner")
    week_plan_with_dependency(script)
    first = (await http.post(f"{chat}/chat", json={"message": "?"}, headers=user)).json()
    sid = first["session_id"]
    event = await make_event(db, user_id, datetime.now(UTC) + timedelta(days=1))
    Script(fake).planner(reply(tool_call("delete_calendar_event", event_id=str(event))))
    second = (
        await http.post(
            f"{chat}/chat", json={"session_id": sid, "message": "Delete it"}, headers=user
        )
    ).json()
    assert second["status"] == "awaiting_approval"
    one_by_one = [
        (await http.get(f"{planner}/plans/{turn['plan_id']}", headers=user)).json()
        for turn in (first, second)
    ]

    listed = (await http.get(f"{chat}/sessions/{sid}/plans", headers=user)).json()
    assert listed["plans"] == one_by_one
    complex_turn, waiting = one_by_one
    assert len(complex_turn["steps"]) == 2 and len(complex_turn["threads"]) == 2
    assert len(complex_turn["executions"]) == 3 and waiting["approvals"][0]["status"] == "pending"
    page = (await http.get(f"{chat}/sessions/{sid}/plans?limit=1", headers=user)).json()
    assert page["plans"] == [complex_turn]
    rest = await http.get(f"{chat}/sessions/{sid}/plans?after_seq={page['last_seq']}", headers=user)
    assert rest.json()["plans"] == [waiting]
    end = rest.json()["last_seq"]
    assert (
        await http.get(f"{chat}/sessions/{sid}/plans?after_seq={end}", headers=user)
    ).json() == {"plans": [], "last_seq": end}

    intruder = as_user(await make_user(db))
    problem(await http.get(f"{chat}/sessions/{sid}/plans", headers=intruder), 404)
    problem(await http.get(f"{chat}/sessions/{sid}/plans?limit=201", headers=user), 422)
    assert (await http.delete(f"{chat}/sessions/{sid}", headers=user)).status_code == 204
    problem(await http.get(f"{chat}/sessions/{sid}/plans", headers=user), 404)


async def test_plans_are_private(
    stack: Stack, http: httpx.AsyncClient, db: Database, as_user: Auth, script: Script
) -> None:
    owner = as_user(await make_user(db))
    script.planner(reply("Hi"))
    plan_id = (
        await http.post(f"{stack.url('chat')}/chat", json={"message": "Hi"}, headers=owner)
    ).json()["plan_id"]
    intruder = as_user(await make_user(db))
    planner = stack.url("agent_planner")
    problem(await http.get(f"{planner}/plans/{plan_id}", headers=intruder), 404)
    problem(await http.post(f"{planner}/plans/{plan_id}/cancel", headers=intruder), 404)
    problem(await http.get(f"{planner}/plans/{plan_id}"), 401)
    mine = await http.get(f"{planner}/plans/{plan_id}", headers=owner)
    assert mine.json()["strategy"] == "direct"


async def test_openapi_is_served_by_every_function(stack: Stack, http: httpx.AsyncClient) -> None:
    expected = {
        "chat": "/chat",
        "agent_planner": "/plans/{plan_id}/run",
        "agent_executor": "/steps/{step_id}/run",
    }
    for function, path in expected.items():
        spec = (await http.get(f"{stack.url(function)}/openapi.json")).json()
        assert spec["info"]["title"] == function
        assert path in spec["paths"]


async def test_the_same_send_twice_at_once_stores_one_message_and_one_plan(
    stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
    fake: FakeModelServer,
) -> None:
    user_id = await make_user(db)
    user = as_user(user_id)
    script.planner(reply("Hello once."))
    body = {"message": "Hi", "client_message_id": "twice"}
    replies = await asyncio.gather(
        *(http.post(f"{stack.url('chat')}/chat", json=body, headers=user) for _ in range(2))
    )
    assert [r.status_code for r in replies] == [200, 200]
    assert len({r.json()["plan_id"] for r in replies}) == 1
    assert sorted(r.json()["created"] for r in replies) == [False, True]
    assert (
        await count(
            db, "SELECT count(*) FROM chat_messages WHERE user_id = %s AND role = 'user'", user_id
        )
        == 1
    )
    assert await count(db, "SELECT count(*) FROM agent_plans WHERE user_id = %s", user_id) == 1
    assert len(fake.requests) == 1  # and the model answered it once


async def test_over_http_one_turn_is_one_trace_and_its_plan_names_it(
    http_stack: Stack,
    http: httpx.AsyncClient,
    db: Database,
    as_user: Auth,
    script: Script,
) -> None:
    """`INVOKER_TRANSPORT=http`: the invoker's calls carry the trace context (`traceparent`),
    so the chat's request, the planner's and each executor's are one trace."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from shared.kernel.settings import Settings
    from shared.observability import tracing

    user = as_user(await make_user(db))
    week_plan_with_dependency(script)
    exporter = InMemorySpanExporter()
    assert tracing.start(Settings(), service="parley-test", exporter=exporter)
    try:
        sent = await http.post(
            f"{http_stack.url('chat')}/chat", json={"message": "What is on?"}, headers=user
        )
        # A function's span ends when its app returns, on its server's thread, which may be
        # just after its reply reached the caller: export until every one has ended (on
        # Lambda an app has returned before the invocation's spans are flushed).
        deadline = time.monotonic() + 10
        while len([s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]) < 4:
            assert time.monotonic() < deadline, "a function's span never ended"
            tracing.flush()
    finally:
        tracing.stop()
    assert sent.status_code == 200, sent.text
    found = exporter.get_finished_spans()
    servers = {s.name: s for s in found if s.kind == SpanKind.SERVER}
    assert set(servers) == {"POST /chat", "POST /plans/{plan_id}/run", "POST /steps/{step_id}/run"}
    assert len({s.context.trace_id for s in found}) == 1
    clients = {s.context.span_id for s in found if s.kind == SpanKind.CLIENT and s.name == "POST"}
    called = [s for s in found if s.kind == SpanKind.SERVER and s.name != "POST /chat"]
    assert len(called) == 3  # the planner's run and both steps
    assert all(s.parent is not None and s.parent.span_id in clients for s in called)
    plan = (
        await http.get(
            f"{http_stack.url('agent_planner')}/plans/{sent.json()['plan_id']}", headers=user
        )
    ).json()
    trace_id = f"{servers['POST /chat'].context.trace_id:032x}"
    assert plan["trace_id"] == trace_id
    assert {e["trace_id"] for e in plan["executions"]} == {trace_id}
