"""MCP servers as a second tool source: their tools become `ExternalTool`s in the same registry.

Policy is the built-ins' policy: a tool is `read` only when the configuration lists it in
`read_only_tools` (the server's own `readOnlyHint` is not trusted), otherwise `write`; calls
go through the same executor, so offer, call-time check, denial recording and structured
results apply unchanged. There is no database layer for these tools: the operator's
`read_only_tools` declaration is the promise, so declare only tools that truly cannot write.

Each server is held open by one background task for the life of the source (a stdio server
is one subprocess per process, reused across calls), so `open()` and `close()` may run in
different tasks.

A server's answer is stored (the executor's thread, the call's receipt) as text and `jsonb`,
which cannot hold U+0000 (nor a lone surrogate, which has no UTF-8 encoding): each one in a
result or an error message becomes U+FFFD, as in the model's own output, and a result says so
(`REPLACED_NOTE`) so the model knows the text was changed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Collection, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import parse_qsl, urlsplit

from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

from shared.kernel.errors import ConfigurationError
from shared.kernel.settings import McpServerConfig
from shared.kernel.text import storable
from shared.tools.results import ToolCallError
from shared.tools.schema import JsonObject
from shared.tools.tool_registry import NAME, ExternalTool

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

logger = logging.getLogger(__name__)

MAX_ERROR_CHARS = 1000
MAX_TOOL_PAGES = 20
MAX_OFFERED_CHARS = 24_000
"""All MCP tools' definitions together, as offered to the model (~6,000 tokens): tools past it
are left out, so that no server's list crowds every prompt out of its budget."""
REDACTED = "[redacted]"
OMITTED_NOTE = (
    "the server also sent content other than text ({kinds}), which Parley does not pass to "
    "the model: it is left out of this result"
)
REPLACED_NOTE = (
    "characters Postgres cannot store (U+0000 or a lone surrogate) were replaced by U+FFFD"
)


class McpServer:
    """One configured server: a held-open client connection, its tools, and calls to them."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.secrets = secrets_of(config)
        """What is cut out of the server's answers and of what is logged about it."""
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect (in a task of its own that keeps the connection); raise if that fails."""
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{self.config.name}")
        await self._ready.wait()
        if self._error is not None:
            raise ConfigurationError(
                f"MCP server {self.config.name}: could not connect ({type(self._error).__name__})"
            ) from self._error

    async def stop(self) -> None:
        """Close the connection (and end a stdio server's process)."""
        self._closing.set()
        if self._task is not None:
            await self._task

    async def _hold(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                self._client = await stack.enter_async_context(await self._connect(stack))
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:  # reported by start(); after that, calls fail on their own
            self._error = exc
            logger.warning(
                "MCP server %s: connection ended: %s", self.config.name, self.described(exc)
            )
        finally:
            self._client = None
            self._ready.set()

    async def _connect(self, stack: AsyncExitStack) -> Client:
        from mcp import Client, StdioServerParameters  # parley[mcp], when used

        config = self.config
        if config.command is not None:
            env = {key: value.get_secret_value() for key, value in config.env.items()}
            params = StdioServerParameters(
                command=config.command, args=config.args, env=env or None, cwd=config.cwd
            )
            return Client(params, read_timeout_seconds=config.timeout_seconds)
        import httpx2  # with an HTTP server
        from mcp.client.streamable_http import streamable_http_client  # when used

        headers = {key: value.get_secret_value() for key, value in config.headers.items()}
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
        )
        assert config.url is not None
        transport = streamable_http_client(config.url, http_client=http)
        return Client(transport, read_timeout_seconds=config.timeout_seconds)

    def _connected(self) -> Client:
        if self._client is None:
            raise ToolCallError("tool_failed", f"MCP server {self.config.name} is not connected")
        return self._client

    async def list_tools(self) -> list[Tool]:
        """Every tool the server offers (following pagination)."""
        client, tools, cursor = self._connected(), [], None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                return tools
        logger.warning(
            "MCP server %s: tools past its first %d pages left out",
            self.config.name,
            MAX_TOOL_PAGES,
        )
        return tools

    async def call(self, tool_name: str, arguments: JsonObject) -> JsonObject:
        """Call `tool_name`; an error result becomes `ToolCallError("tool_failed")`, the
        server's own timeout a `TimeoutError` (as the executor's). The configuration's secrets
        (`self.secrets`) are cut out of whatever the server answers: it may echo its environment
        or headers, and the answer goes to the model, the events and the logs."""
        try:
            result = await self._connected().call_tool(
                tool_name, dict(arguments), read_timeout_seconds=self.config.timeout_seconds
            )
        except (ToolCallError, TimeoutError):
            raise
        except Exception as exc:  # the protocol's or the transport's: its text may quote secrets
            if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
                raise TimeoutError from None
            logger.warning(
                "MCP server %s: %s failed: %s", self.config.name, tool_name, self.described(exc)
            )
            raise ToolCallError("tool_failed", _failed(self.config.name, exc)) from None
        return _payload(result, self.secrets)

    def described(self, exc: BaseException) -> str:
        """`exc` as it may be logged: its type and its text, secrets cut out, shortened."""
        return f"{type(exc).__name__}: {_redacted(str(exc), self.secrets)[:MAX_ERROR_CHARS]}"

    def external_tools(self, tools: Sequence[Tool]) -> list[ExternalTool]:
        """The server's tools as registry entries, under this server's policy."""
        return [self._external(tool) for tool in tools]

    def _external(self, tool: Tool) -> ExternalTool:
        config = self.config
        read = tool.name in config.read_only_tools
        destructive = not read and (
            config.destructive_tools is None or tool.name in config.destructive_tools
        )

        async def call(arguments: JsonObject) -> JsonObject:
            return await self.call(tool.name, arguments)

        return ExternalTool(
            name=registered_name(config, tool.name),
            description=tool.description or f"{tool.name} (from MCP server {config.name})",
            input_schema=tool.input_schema,
            access="read" if read else "write",
            call=call,
            destructive=destructive,
        )


class McpSource:
    """The configured MCP servers, connected, with their tools ready to register.

    A server that cannot be reached is logged and left out (the rest of the registry still
    works); `failed` names it.
    """

    def __init__(self, configs: Sequence[McpServerConfig]) -> None:
        self.servers = [McpServer(config) for config in configs]
        self.tools: list[ExternalTool] = []
        self.failed: list[str] = []

    async def open(self) -> list[ExternalTool]:
        """Connect to every server and list its tools."""
        for server in self.servers:
            try:
                await server.start()
                self.tools += server.external_tools(await server.list_tools())
            except Exception as exc:  # its text may quote the configuration: no traceback
                logger.error(
                    "MCP server %s left out: %s", server.config.name, server.described(exc)
                )
                self.failed.append(server.config.name)
                await server.stop()
        return self.tools

    async def close(self) -> None:
        """Disconnect from every server."""
        for server in self.servers:
            await server.stop()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.IGNORECASE)
"""Names of env variables, headers and URL parameters whose values are secrets."""


def secrets_of(config: McpServerConfig) -> list[str]:
    """The values in a server's configuration that are secrets — of env variables, headers and
    URL parameters named like one (`SECRET_NAME`), and a header value's words too (`Bearer
    <token>`) — longest first. Values under 8 characters are left: they would match ordinary
    text (and other values are not secrets: a path or a host is the server's to repeat)."""
    named = [*config.env.items(), *config.headers.items()]
    values = [v.get_secret_value() for k, v in named if SECRET_NAME.search(k)]
    if config.url:
        values += [v for k, v in parse_qsl(urlsplit(config.url).query) if SECRET_NAME.search(k)]
    words = {w for value in values for w in (value, *value.split()) if len(w) >= 8}
    return sorted(words, key=lambda word: (-len(word), word))


def _failed(server: str, exc: Exception) -> str:
    return f"MCP server {server} failed ({type(exc).__name__}); it may or may not have acted"


def admitted(tools: Sequence[ExternalTool], *, taken: Collection[str]) -> list[ExternalTool]:
    """The tools that may join a registry whose names `taken` are in use (the built-ins', the
    agents' control tools): each name once, and all of them within `MAX_OFFERED_CHARS`. The rest
    are logged as left out: one server's bad list must not stop every turn."""
    kept: list[ExternalTool] = []
    names, size = set(taken), 0
    for tool in tools:
        offered = len(json.dumps(tool.definition.as_openai_tool()))
        if tool.name in names:
            logger.warning("MCP tool %s left out: another tool has that name", tool.name)
        elif size + offered > MAX_OFFERED_CHARS:
            logger.warning(
                "MCP tool %s left out: the MCP tools' definitions would pass %d characters, "
                "too much of every prompt",
                tool.name,
                MAX_OFFERED_CHARS,
            )
        else:
            kept.append(tool)
            names.add(tool.name)
            size += offered
    return kept


def registered_name(config: McpServerConfig, tool_name: str) -> str:
    """`<prefix><tool>` made safe for function calling (letters, digits, _ and -; ≤ 64)."""
    prefix = f"{config.name}_" if config.tool_prefix is None else config.tool_prefix
    name = re.sub(r"[^A-Za-z0-9_-]", "_", prefix + tool_name)[:64]
    if not NAME.match(name):
        raise ConfigurationError(f"MCP tool {tool_name!r} has no usable name")
    return name


def _payload(result: CallToolResult, secrets: Sequence[str] = ()) -> JsonObject:
    """A result as the model gets it, `secrets` cut out (before anything is shortened)."""
    texts = [_redacted(block.text, secrets) for block in result.content if block.type == "text"]
    if result.is_error:
        message = storable("\n".join(texts)) or "the MCP tool reported an error"
        if len(message) > MAX_ERROR_CHARS:
            left = len(message) - MAX_ERROR_CHARS
            message = f"{message[:MAX_ERROR_CHARS]}… [{left} more characters of the error left out]"
        raise ToolCallError("tool_failed", message)
    payload: dict[str, Any] = {}
    if result.structured_content is not None:  # its text blocks only repeat it as JSON
        payload["result"] = _redacted(result.structured_content, secrets)
    elif texts:
        payload["text"] = "\n".join(texts)
    skipped = Counter(block.type for block in result.content if block.type != "text")
    if skipped:  # the model is told, not left to guess that the server sent only this
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        payload["omitted_content"] = OMITTED_NOTE.format(kinds=kinds)
    stored: dict[str, Any] = _storable(payload)
    if stored != payload:
        stored["replaced"] = REPLACED_NOTE
    return stored


def _storable(value: Any) -> Any:
    """`value` (JSON) with U+0000 and lone surrogates in its strings, keys too, made U+FFFD."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value


def _redacted(value: Any, secrets: Sequence[str]) -> Any:
    """`value` (JSON or text) with each of `secrets` in its string values replaced by
    `REDACTED` (keys are left: two keys made one would lose an entry)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: _redacted(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(item, secrets) for item in value]
    return value
