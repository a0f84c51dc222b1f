"""The composition root: every long-lived client, built once per cold start.

Functions reach their collaborators through `get_services()`, or `services_of(app)` inside an
app, so tests can swap the whole set with `app.dependency_overrides[get_services]`. Clients
that need configuration are built on first use, so a function that never verifies tokens or
calls a model starts without those settings. Tests and the local stack pass ready-made parts instead
(`Services(settings, llm=..., db=...)`): the fake model server's client, a shared pool.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from functools import cache, cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsError

from shared.kernel.errors import ConfigurationError
from shared.kernel.settings import Settings

if TYPE_CHECKING:
    import httpx2
    from fastapi import FastAPI

    from shared.agents.approval_gate import ApprovalGate
    from shared.auth.access_tokens import TokenVerifier
    from shared.db import Database
    from shared.events import Publisher
    from shared.kernel.admission import TurnSlots
    from shared.llm import LLMClient, ModelRegistry
    from shared.llm.tokens import TokenCounter
    from shared.queues.senders import QueueSender
    from shared.tools import ToolExecutor, ToolRegistry

log = logging.getLogger(__name__)
MCP_MISSING = (
    "MCP_SERVERS names %d server(s), but the MCP SDK is not installed (install parley[mcp]; "
    "for Lambda, build the bundle with `infra/build.py --extra mcp`): their tools are left out"
)


class Services:
    """Settings plus the clients built from them (each built on first use unless given)."""

    def __init__(
        self,
        settings: Settings,
        *,
        db: Database | None = None,
        llm: LLMClient | None = None,
        tools: ToolRegistry | None = None,
        approvals: ApprovalGate | None = None,
        tokens: TokenCounter | None = None,
        event_sinks: Sequence[Publisher] = (),
    ) -> None:
        self.settings = settings
        self.event_sinks = tuple(event_sinks)
        """Publishers every invocation's events also go to (tests, the local stack)."""
        given = {"db": db, "llm": llm, "tools": tools, "approvals": approvals, "tokens": tokens}
        # A given part takes the cached_property's place (it reads the instance dict first).
        self.__dict__.update({name: part for name, part in given.items() if part is not None})
        self._given = frozenset(name for name, part in given.items() if part is not None)

    @cached_property
    def db(self) -> Database:
        from shared.db import Database  # on first use

        return Database(self.settings.database_url, max_size=self.settings.db_pool_max_size)

    @cached_property
    def verifier(self) -> TokenVerifier:
        from shared.auth.access_tokens import TokenVerifier  # on first use

        secret = self.settings.supabase_jwt_secret
        return TokenVerifier(
            secret=secret.get_secret_value() if secret else None, jwks_url=self.settings.jwks_url
        )

    @cached_property
    def http(self) -> httpx2.AsyncClient:
        """One HTTP client for calls to other functions and to Realtime (pooled connections):
        httpx2, the model client's library, with its TLS settings (loaded once for both)."""
        import httpx2  # on first use

        from shared.kernel.tls import http_client_tls_context  # on first use

        timeout = httpx2.Timeout(900.0, connect=10.0)
        return httpx2.AsyncClient(timeout=timeout, verify=http_client_tls_context())

    @cached_property
    def queue_sender(self) -> QueueSender:
        """What `SqsInvoker` puts messages on the queues with (`INVOKER_TRANSPORT=sqs`): SQS's
        JSON API over `http.client`, signed here, when the environment leads to credentials
        and names a region — a Lambda function's always does: its keys, or under SnapStart its
        credentials endpoint (`shared.aws.credentials`) — so that no send imports boto3 (the
        chat function's first `202`). Requests go to `AWS_ENDPOINT_URL_SQS` (or
        `AWS_ENDPOINT_URL`) when set, as boto3's would. Else, or behind an HTTPS proxy,
        boto3's client (`sqs`): it finds credentials every other way (instance profiles, SSO,
        config files) and honours proxies."""
        from shared.aws.credentials import from_environment  # on first use

        environ = os.environ
        credentials = from_environment(environ)
        if credentials is not None and not (
            environ.get("HTTPS_PROXY") or environ.get("https_proxy")
        ):
            from shared.queues.sqs_http import SqsHttpSender  # on first use

            endpoint = environ.get("AWS_ENDPOINT_URL_SQS") or environ.get("AWS_ENDPOINT_URL")
            return SqsHttpSender(credentials, endpoint=endpoint or None)
        from shared.queues.senders import BotoSender  # on first use

        return BotoSender(self.sqs)

    @cached_property
    def sqs(self) -> Any:
        """boto3's SQS client (`INVOKER_TRANSPORT=sqs`): the consumers shorten a failed
        message's visibility and the sweeper reads the dead letters with it (sends go through
        `queue_sender`). boto3 comes with the Lambda runtime; it is imported here, on first
        use, so functions that never use it do not pay for it."""
        try:
            import boto3  # on first use
            from botocore.exceptions import NoRegionError  # on first use
        except ImportError as exc:
            raise ConfigurationError(
                "INVOKER_TRANSPORT=sqs needs boto3 (in the Lambda runtime; elsewhere install "
                "`parley[aws]`)"
            ) from exc
        try:
            return boto3.client("sqs")
        except NoRegionError as exc:
            raise ConfigurationError(
                "INVOKER_TRANSPORT=sqs needs an AWS region: set AWS_REGION"
            ) from exc

    @cached_property
    def turn_slots(self) -> TurnSlots:
        """The turns this process runs at once (`MAX_RUNNING_TURNS`, admission control)."""
        from shared.kernel.admission import TurnSlots  # on first use

        settings = self.settings
        return TurnSlots(settings.max_running_turns, retry_after=settings.retry_after_seconds)

    @cached_property
    def models(self) -> ModelRegistry:
        """Prices, context windows and capabilities by model name (`LLM_MODELS_FILE` applied)."""
        from shared.llm import load_registry  # on first use

        return load_registry(self.settings.llm_models_file)

    @property
    def planner_budget(self) -> int:
        """A new planner's `token_budget`: the configured one, within its model's window."""
        settings = self.settings
        window = self.models.lookup(settings.llm_planner_model).context_window
        return min(settings.planner_token_budget, window)

    @property
    def executor_budget(self) -> int:
        """A new executor's `token_budget`: the configured one, within its model's window."""
        settings = self.settings
        window = self.models.lookup(settings.llm_executor_model).context_window
        return min(settings.executor_token_budget, window)

    @cached_property
    def llm(self) -> LLMClient:
        """The model client; raises `LLMNotConfigured` (saying what to set) when it cannot be."""
        from shared.llm import OpenAIClient  # on first use

        return OpenAIClient.from_settings(self.settings)

    @cached_property
    def tools(self) -> ToolRegistry:
        """The tool registry: the built-in tools (MCP tools are added by whoever connects them)."""
        from shared.tools import builtin_registry  # on first use

        return builtin_registry()

    async def load_mcp_tools(self) -> None:
        """Connect the `MCP_SERVERS` once per process and add their tools to `tools`.

        Called where agents run, just before (the connection lives in this process's event
        loop): never by the chat function's sends, which offer no tool. The MCP SDK is the
        optional `parley[mcp]`, imported here and nowhere else. A server that cannot be
        reached is logged and left out, and so are all of them when the SDK is not installed
        (logged once): the built-in tools work regardless.
        """
        if not self.settings.mcp_servers or "_mcp" in self.__dict__:
            return
        async with self.__dict__.setdefault("_mcp_lock", asyncio.Lock()):
            if "_mcp" in self.__dict__:
                return
            from shared.agents.control_tools import CONTROL_NAMES  # on first use

            try:
                from shared.tools.mcp_source import McpSource, admitted  # on first use
            except ModuleNotFoundError as exc:
                if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
                    raise
                log.error(MCP_MISSING, len(self.settings.mcp_servers))
                self.__dict__["_mcp"] = None
                return
            source = McpSource(self.settings.mcp_servers)
            taken = {tool.name for tool in self.tools} | CONTROL_NAMES
            for tool in admitted(await source.open(), taken=taken):
                self.tools.add(tool)
            self.__dict__["_mcp"] = source

    @cached_property
    def tool_executor(self) -> ToolExecutor:
        from shared.tools import ToolExecutor  # on first use

        return ToolExecutor(self.db, self.tools, timeout_seconds=self.settings.tool_timeout_seconds)

    @cached_property
    def approvals(self) -> ApprovalGate:
        """Consulted before destructive tool calls and on escalations: the user decides through
        `agent_approvals` rows (`APPROVALS=on`, the default), or nobody is asked (`off`)."""
        from shared.agents.approval_gate import DatabaseApprovals, NoApprovals  # on first use

        if self.settings.approvals == "off":
            return NoApprovals()
        return DatabaseApprovals(self.db)

    @cached_property
    def tokens(self) -> TokenCounter:
        """The tokenizer budgets are measured with (DeepSeek's; loaded on first count)."""
        from shared.llm.tokens import DeepSeekTokenizer  # on first use

        return DeepSeekTokenizer()

    async def aclose(self) -> None:
        """Close the clients these services built (not the ones they were given); they are
        built afresh on next use (tests and the local stack; a Lambda just freezes)."""
        built = {
            name: self.__dict__.pop(name)
            for name in ("db", "http", "llm", "_mcp")
            if name in self.__dict__ and name not in self._given
        }
        if (sender := self.__dict__.pop("queue_sender", None)) is not None:
            sender.close()
        if built.get("_mcp") is not None:
            self.__dict__.pop("tools", None)  # its MCP tools belonged to the closed connection
            await built["_mcp"].close()
        for name in ("db", "http", "llm"):
            closer = getattr(built.get(name), "aclose", None) or getattr(
                built.get(name), "close", None
            )
            if closer is not None:
                await closer()


@cache
def _with_the_stages_secret() -> type[Settings]:
    """`Settings` read as a deployed function reads them when `SETTINGS_SECRET_ID` names a
    secret: given values, the environment, then the secret (`shared.aws.secrets`). Made on
    first use: a pydantic model costs a cold start ~4 ms to build, and only functions with a
    secret need this one."""
    from shared.aws.secrets import SecretsManagerSource  # only where a secret is named

    class FromTheStagesSecret(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return init_settings, env_settings, SecretsManagerSource(settings_cls)

    return FromTheStagesSecret


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment (and the stage's secret), turning validation errors
    into one clear message; a model DeepSeek retired is refused here, at start."""
    try:
        read = _with_the_stages_secret() if os.environ.get("SETTINGS_SECRET_ID") else Settings
        settings = read(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigurationError(f"Invalid configuration — {_problems(exc)}") from exc
    except SettingsError as exc:  # a value pydantic-settings could not decode, e.g. bad JSON
        raise ConfigurationError(f"Invalid configuration — {exc}") from exc
    from shared.llm.model_registry import refuse_retired_models  # the registry only when checking

    refuse_retired_models(settings)
    return settings


def _problems(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]).upper()
        cause = (err.get("ctx") or {}).get("error")
        message = str(cause) if err["type"] == "value_error" and cause else err["msg"]
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once per cold start."""
    return load_settings()


def build_services(settings: Settings | None = None) -> Services:
    """Services for `settings` (default: the environment's)."""
    return Services(settings or get_settings())


@lru_cache(maxsize=1)
def get_services() -> Services:
    """The process-wide services."""
    return build_services()


def services_of(app: FastAPI) -> Services:
    """`app`'s services: `get_services()`, or what a test put in its place
    (`app.dependency_overrides[get_services]`)."""
    provider = app.dependency_overrides.get(get_services, get_services)
    services: Services = provider()
    return services
