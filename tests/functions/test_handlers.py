"""Each Lambda handler answers committed, real-shaped function URL events (payload v2)."""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from shared.db import Database
from shared.runtime.lambda_handler import event_kind
from shared.services import Services, get_services
from tests.functions.conftest import token
from tests.support.factories import make_user, make_world

EVENTS = Path(__file__).resolve().parents[1] / "support" / "lambda_events"


@dataclass
class LambdaContext:
    function_name: str = "parley-dev-chat"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:eu-central-1:123456789012:function:parley-dev-chat"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = "5f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f"
    log_group_name: str = "/aws/lambda/parley-dev-chat"
    log_stream_name: str = "2026/11/22/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def load_event(name: str, user_id: UUID | None = None, **values: str) -> dict[str, Any]:
    text = (EVENTS / name).read_text()
    if user_id is not None:
        text = text.replace("{{TOKEN}}", token(user_id))
    for key, value in values.items():
        text = text.replace("{{" + key.upper() + "}}", value)
    event: dict[str, Any] = json.loads(text)
    return event


@pytest.fixture
def invoke(services: Services) -> Iterator[Callable[[str, dict[str, Any]], dict[str, Any]]]:
    """Call a function's handler like the Lambda runtime: one thread and loop, warm reuse."""
    worker = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.new_event_loop()
    worker.submit(asyncio.set_event_loop, loop).result()
    touched = []

    def call(function: str, event: dict[str, Any]) -> dict[str, Any]:
        # Imported on the worker, as the runtime does: Mangum sets up a loop where it is built.
        module = worker.submit(importlib.import_module, f"functions.{function}.handler").result()
        module.handler.app.dependency_overrides[get_services] = lambda: services
        touched.append(module.handler.app)
        result: dict[str, Any] = worker.submit(module.handler, event, LambdaContext()).result()
        return result

    yield call
    worker.submit(loop.run_until_complete, services.aclose()).result()
    worker.submit(loop.close).result()
    worker.shutdown()
    for app in touched:
        app.dependency_overrides.clear()


@pytest.mark.parametrize("function", ["agent_planner", "agent_executor"])
def test_health_through_the_handler(invoke, function: str) -> None:
    response = invoke(function, load_event(f"{function}_health.json"))
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"status": "ok", "function": function}


async def test_chat_handler_serves_a_user_twice(invoke, db: Database) -> None:
    user = await make_user(db)
    created = invoke("chat", load_event("chat_create_session.json", user))
    assert created["statusCode"] == 201
    assert json.loads(created["body"])["title"] == "From a function URL"
    listed = invoke("chat", load_event("chat_list_sessions.json", user))  # a warm invocation
    assert listed["statusCode"] == 200
    assert [s["title"] for s in json.loads(listed["body"])["sessions"]] == ["From a function URL"]


def test_chat_handler_refuses_anonymous_callers(invoke) -> None:
    response = invoke("chat", load_event("chat_unauthenticated.json"))
    assert response["statusCode"] == 401
    assert response["headers"]["content-type"] == "application/problem+json"
    body = response["body"]
    text = base64.b64decode(body).decode() if response["isBase64Encoded"] else body
    assert "Missing bearer token" in json.loads(text)["detail"]


async def test_planner_handler_serves_a_plan_to_its_owner(invoke, db: Database) -> None:
    user = await make_user(db)
    world = await make_world(db, user)
    event = load_event("agent_planner_get_plan.json", user, plan_id=str(world["agent_plans"]))
    response = invoke("agent_planner", event)
    assert response["statusCode"] == 200
    plan = json.loads(response["body"])
    assert (plan["id"], [s["step_number"] for s in plan["steps"]]) == (
        str(world["agent_plans"]),
        [1],
    )


def test_executor_handler_runs_steps_for_the_service_only(invoke, services: Services) -> None:
    key = token(None, role="service_role")
    missing = load_event("agent_executor_run_step.json", step_id=str(uuid4()), service_key=key)
    response = invoke("agent_executor", missing)
    assert response["statusCode"] == 404  # the route ran, as the service, and found no step
    assert response["headers"]["content-type"] == "application/problem+json"
    as_user = load_event(
        "agent_executor_run_step.json", step_id=str(uuid4()), service_key=token(uuid4())
    )
    assert invoke("agent_executor", as_user)["statusCode"] == 403


PREPARED = """
import json, logging, sys
logging.basicConfig(level=logging.ERROR, stream=sys.stdout, format="%(levelname)s %(message)s")
from functions.chat.handler import handler
from shared.services import get_services
built = get_services.cache_info().currsize
services = get_services() if built else None
print(json.dumps({
    "services_built": built,
    "queue_module": "shared.dispatch.sqs_invoker" in sys.modules,
    "sender_module": "shared.queues.sqs_http" in sys.modules,
    "aws_sdk": sorted({m.split(".")[0] for m in sys.modules} & {"boto3", "botocore"}),
    "connected": services is not None and "db" in services.__dict__,
}))
"""


def prepared(**env: str) -> tuple[dict[str, Any], str]:
    """Import the chat handler in a fresh process (as a Lambda init does) with `env`."""
    done = subprocess.run(
        [sys.executable, "-c", PREPARED],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    *logged, last = done.stdout.strip().splitlines()
    return json.loads(last), "\n".join(logged)


def test_the_chat_handler_reads_its_settings_at_init_and_connects_to_nothing() -> None:
    found, logged = prepared(INVOKER_TRANSPORT="sqs", PLANNER_QUEUE_URL="https://sqs.test/1/p")
    assert found == {
        "services_built": 1,
        "queue_module": True,
        "sender_module": True,
        "aws_sdk": [],
        "connected": False,
    }
    assert logged == ""
    found, _ = prepared(INVOKER_TRANSPORT="in_process")
    assert found == {
        "services_built": 1,
        "queue_module": False,
        "sender_module": False,
        "aws_sdk": [],
        "connected": False,
    }


AGENT_CORE = """
import importlib, json, sys
module = importlib.import_module(f"functions.{sys.argv[1]}.handler")
from shared.services import get_services
services = get_services()
print(json.dumps({
    "agents": sorted(m for m in ("shared.agents.planner.runs", "shared.agents.executor.steps")
                     if m in sys.modules),
    "model_client": "openai" in sys.modules,
    "tools": "tools" in services.__dict__,
    "connected": "db" in services.__dict__,
}))
"""


@pytest.mark.parametrize(
    ("function", "agent"),
    [("agent_planner", "planner"), ("agent_executor", "executor"), ("chat", None)],
)
def test_the_agent_functions_load_their_agent_at_init_and_the_chat_does_not(
    function: str, agent: str | None
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", AGENT_CORE, function], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    loaded = agent is not None
    assert found["model_client"] is loaded and found["tools"] is loaded
    assert found["connected"] is False
    if agent == "executor":
        assert found["agents"] == ["shared.agents.executor.steps"]
    elif agent == "planner":  # the planner's module imports the executor's (planner steps)
        assert "shared.agents.planner.runs" in found["agents"]
    else:
        assert found["agents"] == []


CHAT_IMPORT = """
import __future__, json, sys
import functions.chat.handler
from fastapi import APIRouter
from pydantic import BaseModel

def models_or_routes(module):
    return any((isinstance(value, type) and issubclass(value, BaseModel)
                and value.__module__ == module.__name__) or isinstance(value, APIRouter)
               for value in vars(module).values())

own = [module for name, module in sorted(sys.modules.items())
       if name.split(".")[0] in ("shared", "functions")]
checked = [module for module in own if models_or_routes(module)]
print(json.dumps({
    "checked": [module.__name__ for module in checked],
    "string_annotations": [module.__name__ for module in checked
                           if vars(module).get("annotations") is __future__.annotations],
    "agent_wire_models": "shared.wire.runs" in sys.modules,
    "registry_schema": "shared.llm.registry_file" in sys.modules,
}))
"""


def test_the_chat_handler_import_leaves_out_what_costs_its_cold_start() -> None:
    """What keeps Parley's own share of the chat's cold start small (`bench.cold_start`): it
    loads none of the planner's and executor's wire models nor the registry file's schema (the
    suite checks the shipped file), and the modules whose annotations pydantic or FastAPI read
    at import (models, routes) hold them as objects — with `from __future__ import annotations`
    each field and parameter is a string, compiled and evaluated once more (~5 ms over the
    chat's)."""
    done = subprocess.run(
        [sys.executable, "-c", CHAT_IMPORT], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"shared.wire.turns", "shared.kernel.settings", "functions.chat.sessions"} <= set(
        found["checked"]
    )
    assert found["string_annotations"] == []
    assert found["agent_wire_models"] is False
    assert found["registry_schema"] is False  # the shipped registry is read, not re-checked


def test_a_model_client_that_cannot_load_its_certificates_does_not_fail_init() -> None:
    env = {**os.environ, "SSL_CERT_FILE": "/nonexistent/ca.pem"}
    done = subprocess.run(
        [sys.executable, "-c", AGENT_CORE, "agent_executor"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1])["tools"] is True
    assert "the model client's TLS settings" in done.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [({"DB_POOL_MAX_SIZE": "0"}, "DB_POOL_MAX_SIZE"), ({"MCP_SERVERS": "not json"}, "mcp_servers")],
    ids=["out of range", "not JSON"],
)
def test_invalid_settings_at_init_are_logged_and_left_to_the_requests(
    env: dict[str, str], named: str
) -> None:
    found, logged = prepared(**env)
    assert found == {
        "services_built": 0,
        "queue_module": False,
        "sender_module": False,
        "aws_sdk": [],
        "connected": False,
    }
    assert "Invalid configuration" in logged and named in logged


@pytest.mark.parametrize(
    "shape",
    [
        {"requestContext": {}, "rawPath": "/health"},
        {"version": "2.0", "requestContext": {"requestId": "r"}, "rawPath": "/health"},
        {"version": "1.0", "requestContext": {"http": {}}, "path": "/health"},
    ],
    ids=["no version", "no requestContext.http", "payload 1.0"],
)
def test_an_event_not_shaped_like_a_function_urls_is_not_taken_for_one(
    shape: dict[str, Any],
) -> None:
    """It is refused, naming what arrived, instead of failing inside Mangum."""
    assert event_kind(shape) is None
    assert event_kind(load_event("chat_list_sessions.json")) == "http"
