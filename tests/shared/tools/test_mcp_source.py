"""MCP as a second tool source: a real stdio MCP server, offered and enforced like built-ins."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from shared.agents.control_tools import CONTROL_NAMES
from shared.db import Database, dialogue, receipts
from shared.db.receipts import CallKey
from shared.kernel.errors import ConfigurationError
from shared.kernel.settings import McpServerConfig
from shared.services import Services, load_settings
from shared.tools import ToolExecutor, ToolRegistry, TurnCache, builtin_registry, offered_tools
from shared.tools.calls import ToolCall
from shared.tools.executor import RESENT_NOTE
from shared.tools.mcp_source import (
    MAX_OFFERED_CHARS,
    REDACTED,
    REPLACED_NOTE,
    McpSource,
    admitted,
    secrets_of,
)
from shared.tools.results import ToolCallError, ToolResult
from shared.tools.schema import JsonObject
from shared.tools.tool_registry import ExternalTool
from tests.support import ROOT
from tests.support.domain_rows import Crew, call, execution_row

SERVER = ROOT / "tests" / "support" / "mcp_echo_server.py"


def echo_config(**changes: object) -> McpServerConfig:
    values: dict[str, object] = {
        "name": "echo",
        "command": sys.executable,
        "args": [str(SERVER)],
        "read_only_tools": ["echo"],
    }
    return McpServerConfig.model_validate({**values, **changes})


@pytest.fixture(scope="module")
async def mcp_registry() -> AsyncIterator[ToolRegistry]:
    registry = builtin_registry()
    async with McpSource([echo_config()]) as source:
        for tool in source.tools:
            registry.add(tool)
        yield registry


@pytest.fixture(scope="module")
def mcp_executor(db: Database, mcp_registry: ToolRegistry) -> ToolExecutor:
    return ToolExecutor(db, mcp_registry, timeout_seconds=10)


async def test_only_declared_tools_are_read_tools(mcp_registry: ToolRegistry, crew: Crew) -> None:
    tools = {t.name: t for t in mcp_registry if t.name.startswith("echo_")}
    assert {name: (t.access, t.destructive) for name, t in tools.items()} == {
        "echo_echo": ("read", False),
        "echo_shout": ("write", True),
        "echo_tally": ("write", True),
        "echo_refuse": ("write", True),
    }
    executor_names = [d.name for d in offered_tools(crew.executor, mcp_registry)]
    planner_names = [d.name for d in offered_tools(crew.planner, mcp_registry)]
    assert "echo_echo" in executor_names and "echo_shout" not in executor_names
    assert {"echo_echo", "echo_shout", "echo_refuse"} <= set(planner_names)
    assert tools["echo_echo"].definition.parameters["required"] == ["text"]


async def test_executor_calls_its_read_tool_and_is_denied_the_other(
    db: Database, mcp_executor: ToolExecutor, crew: Crew
) -> None:
    read = await call(mcp_executor, crew.as_executor(), "echo_echo", text="hi", times=2)
    write = await call(mcp_executor, crew.as_executor(), "echo_shout", text="hi")

    assert read.payload == {"result": {"result": "hi hi"}}
    assert write.error == "permission_denied"
    async with db.service() as conn:
        messages = await dialogue.list_thread_messages(conn, thread_id=crew.thread.id)
    assert [(m.message_type, m.tool_name) for m in messages] == [
        ("permission_denied", "echo_shout")
    ]
    run = await execution_row(db, crew.execution.id)
    assert (run.tool_call_count, run.permission_denials) == (2, 1)


async def test_planner_may_call_the_write_tool(mcp_executor: ToolExecutor, crew: Crew) -> None:
    result = await call(mcp_executor, crew.as_planner(), "echo_shout", text="hi")
    assert result.payload == {"result": {"result": "HI"}}


async def test_a_resumed_mcp_write_is_not_sent_again_once_answered_and_marked_if_unknown(
    db: Database, mcp_executor: ToolExecutor, crew: Crew
) -> None:
    context = replace(crew.as_planner(), plan_id=crew.thread.plan_id)

    async def tally(call_id: str) -> ToolResult:
        made = ToolCall(call_id, "echo_tally", json.dumps({"label": call_id}))
        return await mcp_executor.execute(made, context=context, turn=TurnCache())

    first = await tally("call_a")
    again = await tally("call_a")  # the same call, resumed after its result was recorded
    assert first.payload == again.payload == {"result": {"result": 1}}

    key = CallKey.of(crew.thread.plan_id, "call_b", "echo_tally", '{"label":"call_b"}')
    async with db.service() as conn:  # an earlier attempt was sent and never answered
        await receipts.begin(conn, key, user_id=crew.user_id, tool_name="echo_tally")
    resent = await tally("call_b")
    assert resent.payload == {"result": {"result": 1}, "resent": True, "note": RESENT_NOTE}
    assert "sent again" in resent.content()
    assert (await tally("call_b")).payload == {"result": {"result": 1}}  # recorded now


async def test_arguments_are_validated_against_the_servers_schema(
    mcp_executor: ToolExecutor, crew: Crew
) -> None:
    missing = await call(mcp_executor, crew.as_executor(), "echo_echo", times=2)
    wrong = await call(mcp_executor, crew.as_executor(), "echo_echo", text="a", times="x")
    assert (missing.error, wrong.error) == ("invalid_arguments", "invalid_arguments")
    assert "'text' is a required property" in str(missing.payload["message"])


async def test_a_server_error_is_a_structured_tool_failure(
    mcp_executor: ToolExecutor, crew: Crew
) -> None:
    result = await call(mcp_executor, crew.as_planner(), "echo_refuse", reason="no way")
    assert result.error == "tool_failed"
    assert "refused: no way" in str(result.payload["message"])


async def test_what_postgres_cannot_store_in_a_servers_answer_is_replaced(
    mcp_executor: ToolExecutor, crew: Crew
) -> None:
    """The echo server sends a NUL back (as `\\u0000` in its JSON); the result says it was
    replaced, and an error message is cleaned the same way."""
    echoed = await call(mcp_executor, crew.as_executor(), "echo_echo", text="a\x00b")
    refused = await call(mcp_executor, crew.as_planner(), "echo_refuse", reason="no\x00way")

    assert echoed.payload == {"result": {"result": "a\ufffdb"}, "replaced": REPLACED_NOTE}
    assert refused.error == "tool_failed"
    assert "refused: no\ufffdway" in str(refused.payload["message"])
    assert "\x00" not in json.dumps(refused.payload, ensure_ascii=False)


async def test_an_unreachable_server_is_left_out_not_fatal() -> None:
    broken = echo_config(name="broken", args=["-c", "raise SystemExit(3)"])
    async with McpSource([broken]) as source:
        assert (source.failed, source.tools) == (["broken"], [])


def test_servers_are_configured_from_one_json_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    servers = [
        {"name": "files", "command": "npx", "args": ["-y", "fs"], "read_only_tools": ["read"]},
        {
            "name": "remote",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer s3cret"},
        },
    ]
    monkeypatch.setenv("MCP_SERVERS", json.dumps(servers))
    files, remote = load_settings().mcp_servers
    assert (files.command, files.read_only_tools, remote.url) == (
        "npx",
        ["read"],
        "https://mcp.example.com/mcp",
    )
    assert "s3cret" not in repr(remote)


@pytest.mark.parametrize(
    "server",
    [
        {"name": "both", "command": "x", "url": "https://a"},
        {"name": "neither"},
        {"name": "bad name!", "command": "x"},
        {"name": "ftp", "url": "ftp://a"},
    ],
)
def test_bad_server_entries_are_configuration_errors(
    monkeypatch: pytest.MonkeyPatch, server: dict[str, str]
) -> None:
    monkeypatch.setenv("MCP_SERVERS", json.dumps([server]))
    with pytest.raises(ConfigurationError, match="MCP_SERVERS"):
        load_settings()


async def test_services_load_configured_servers_into_their_registry(database_url: str) -> None:
    services = Services(load_settings(database_url=database_url, mcp_servers=[echo_config()]))
    assert services.tools.get("echo_echo") is None
    try:
        await services.load_mcp_tools()
        await services.load_mcp_tools()  # once per process: no second connection, no clash
        echo = services.tools.get("echo_echo")
        assert echo is not None and echo.access == "read"
        assert services.tools.get("list_tasks") is not None  # the built-ins are still there
    finally:
        await services.aclose()


def _external(name: str, description: str = "d") -> ExternalTool:
    async def call(arguments: JsonObject) -> JsonObject:
        return {}

    schema: JsonObject = {"type": "object", "properties": {"x": {"type": "string"}}}
    return ExternalTool(
        name=name, description=description, input_schema=schema, access="read", call=call
    )


def test_a_servers_tools_that_would_clash_or_crowd_the_prompt_are_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One server's bad list must not stop every turn: a name already taken (a built-in, an
    agent's control tool, an earlier tool) and tools past the definitions' budget are left out
    and logged; the rest are admitted."""
    big = "x" * (MAX_OFFERED_CHARS // 2)
    tools = [
        _external("a_find"),
        _external("list_tasks"),
        _external("create_plan"),
        _external("a_find"),
        _external("a_big", big),
        _external("a_bigger", big),
        _external("a_last"),
    ]
    kept = admitted(tools, taken={"list_tasks", *CONTROL_NAMES})
    assert [t.name for t in kept] == ["a_find", "a_big", "a_last"]
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(left_out) == 4 and any("a_bigger" in m for m in left_out)


async def test_the_servers_configured_secrets_are_cut_out_of_what_it_answers() -> None:
    """A server may echo its environment or headers: its answers and errors go to the model,
    the events and the logs, so values named like secrets are cut out of them — before an
    error is shortened, so no part of one is left — and other values are not."""
    secret = "sk-SUPERSECRET-123"
    env = {"PARLEY_TOKEN": secret, "DATA_DIR": "/srv/parley-data"}
    async with McpSource([echo_config(env=env)]) as source:
        tools = {t.name: t for t in source.tools}
        echoed = await tools["echo_echo"].call({"text": f"token={secret} in /srv/parley-data"})
        with pytest.raises(ToolCallError) as refused:
            await tools["echo_refuse"].call({"reason": "x" * 950 + secret})  # cut at 1,000
    assert echoed == {"result": {"result": f"token={REDACTED} in /srv/parley-data"}}
    assert "sk-SUP" not in refused.value.message and REDACTED in refused.value.message


def test_secrets_are_the_values_named_like_secrets_and_a_headers_words() -> None:
    config = McpServerConfig.model_validate(
        {
            "name": "remote",
            "url": "https://mcp.example.com/mcp?api_key=k-1234567890&lang=en-GB",
            "headers": {"Authorization": "Bearer tok-abcdefgh", "Accept": "application/json"},
        }
    )
    assert secrets_of(config) == ["Bearer tok-abcdefgh", "k-1234567890", "tok-abcdefgh"]


async def test_a_server_whose_tools_clash_is_left_out_and_the_turns_go_on(
    database_url: str,
) -> None:
    twin = echo_config(name="twin", tool_prefix="echo_")  # the same names as the first server's
    services = Services(load_settings(database_url=database_url, mcp_servers=[echo_config(), twin]))
    try:
        await services.load_mcp_tools()
        await services.load_mcp_tools()  # loaded once: no error, no second try
        names = [tool.name for tool in services.tools]
        assert names.count("echo_echo") == 1 and "list_tasks" in names
    finally:
        await services.aclose()


MISSING_SDK = """
import asyncio, json, logging, sys
sys.modules["mcp"] = None  # as if parley[mcp] were not installed: `import mcp` fails
from shared.services import Services
from shared.services import load_settings
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
services = Services(load_settings(mcp_servers=json.loads(sys.argv[1])))
asyncio.run(services.load_mcp_tools())
asyncio.run(services.load_mcp_tools())
print(json.dumps(sorted(tool.name for tool in services.tools)))
"""


def test_without_the_mcp_sdk_configured_servers_are_logged_once_and_left_out() -> None:
    """The SDK is the optional `parley[mcp]`: a deployment that configures servers but was
    built without it runs with the built-in tools, and says why (in a process of its own:
    this one has the SDK loaded)."""
    servers = json.dumps([echo_config().model_dump(mode="json")])
    done = subprocess.run(
        [sys.executable, "-c", MISSING_SDK, servers],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    tools = json.loads(done.stdout.splitlines()[-1])
    assert "list_tasks" in tools and not any(name.startswith("echo_") for name in tools)
    assert done.stderr.count("the MCP SDK is not installed") == 1
    assert "infra/build.py --extra mcp" in done.stderr
