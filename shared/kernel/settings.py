"""One typed settings object, read from the environment (field names are the env var names)."""

from decimal import Decimal
from pathlib import Path
from typing import Literal, Self

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

Thinking = Literal["enabled", "disabled", "auto"]

#: The JWT secret of `supabase start` (public, documented by Supabase); local stack only.
LOCAL_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long"


class McpServerConfig(BaseModel):
    """One MCP server whose tools join the tool registry (an entry of `MCP_SERVERS`).

    Exactly one of `command` (stdio: the server runs as a subprocess) or `url` (streamable
    HTTP). A tool is `read` only when its name is listed in `read_only_tools`; every other tool
    of the server is `write` — whatever the server's own read-only hints say.
    """

    # Mutable defaults are written as such: pydantic copies them per instance, and a
    # `default_factory=list` has pydantic read `list`'s signature, which costs a cold start
    # ~4 ms (`inspect` compiles `tokenize`'s patterns for it).
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    """Short name; prefixes the server's tool names (`<name>_<tool>`) unless `tool_prefix`."""
    command: str | None = None
    """Executable of a stdio server, e.g. `npx` or `/usr/bin/python3`."""
    args: list[str] = []
    """Arguments of `command`."""
    env: dict[str, SecretStr] = {}
    """Extra environment of a stdio server (it inherits only PATH, HOME and the like)."""
    cwd: str | None = None
    """Working directory of a stdio server."""
    url: str | None = None
    """Endpoint of a streamable HTTP server, e.g. https://mcp.example.com/mcp."""
    headers: dict[str, SecretStr] = {}
    """HTTP headers for `url`, e.g. {"Authorization": "Bearer ..."}."""
    read_only_tools: list[str] = []
    """The server's tool names (unprefixed) that only read: offered to read-only agents."""
    destructive_tools: list[str] | None = None
    """Write tools that destroy data. None: every write tool of this server counts as
    destructive (fail closed)."""
    tool_prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{0,32}$")
    """Prefix of the registered tool names; default `<name>_`; "" for none."""
    timeout_seconds: float = Field(default=30.0, gt=0)
    """How long one call may take."""

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name}: set exactly one of command or url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server {self.name}: url must start with http:// or https://")
        return self


class Settings(BaseSettings):
    """Parley's configuration. Every field is documented in the README's configuration table."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, case_sensitive=False)

    settings_secret_id: str | None = None
    """A Secrets Manager secret (name or ARN) whose JSON object holds settings, keys named like
    these variables (`{"DATABASE_URL": "...", "LLM_API_KEY": "..."}`): read once, when the
    settings are, with the process's AWS credentials (`shared.aws.secrets`); a variable set in
    the environment wins over the secret's. How the deployed functions get their secrets."""

    database_url: str | None = None
    """Postgres URL. Unset: an embedded Postgres under `parley_data_dir` is started and used."""
    parley_data_dir: Path = Path(".parley")
    """Where local state lives (the embedded database cluster)."""
    db_pool_max_size: int = Field(default=2, ge=1, le=50)
    """Connections per process; keep it at 1–2 per Lambda behind Supavisor (a long-running
    server can use more: `python3 dev.py run` uses 8)."""
    max_running_turns: int = Field(default=64, ge=0)
    """Turns this process runs at once; a send past it is answered 503 with `Retry-After`
    (nothing stored) instead of slowing every running turn down. 0: no limit."""
    retry_after_seconds: int = Field(default=1, ge=1)
    """The `Retry-After` of those 503s."""

    supabase_url: str | None = None
    """Project URL, e.g. https://abcd.supabase.co (Realtime broadcasts go to it)."""
    supabase_anon_key: SecretStr | None = None
    """The project's anon (publishable) key."""
    supabase_service_role_key: SecretStr | None = None
    """The service-role key: authorises Realtime broadcasts. Never sent to a client."""
    supabase_jwt_secret: SecretStr | None = None
    """HS256 secret user JWTs are signed with (Project settings → API → JWT secret)."""
    supabase_jwks_url: str | None = None
    """JWKS of asymmetric signing keys; default `{SUPABASE_URL}/auth/v1/.well-known/jwks.json`."""

    llm_base_url: str = "https://api.deepseek.com"
    """Any OpenAI-compatible endpoint: DeepSeek (default), OpenAI, Ollama, vLLM, OpenRouter."""
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("LLM_API_KEY", "DEEPSEEK_API_KEY")
    )
    """API key for `llm_base_url`; `DEEPSEEK_API_KEY` is accepted too."""
    llm_planner_model: str = "deepseek-v4-pro"
    """Model of the planner (the stronger tier)."""
    llm_executor_model: str = "deepseek-flash"
    """Model of the executors (the cheap, fast tier)."""
    llm_planner_thinking: Thinking = "auto"
    """The planner's thinking mode, sent as DeepSeek's `thinking` field: `enabled`, `disabled`,
    or `auto` (the model's default: DeepSeek's V4 models think). Only models with a thinking
    switch (model registry) are told; others do what they do."""
    llm_executor_thinking: Thinking = "disabled"
    """The executors' thinking mode. Executors are short tool loops where speed and price
    matter most: thinking costs output tokens (the dearest kind) and latency on every turn."""
    llm_timeout_seconds: float = Field(default=60.0, gt=0)
    """Timeout of each step of an LLM request: connecting, sending, each read of the reply."""
    llm_max_retries: int = Field(default=3, ge=0, le=10)
    """Retries on 429/5xx/connection errors/timeouts, with backoff and jitter."""
    llm_retry_base_delay_seconds: float = Field(default=0.5, ge=0)
    """First backoff ceiling; it doubles per retry, and the wait is drawn uniformly below it."""
    llm_retry_max_delay_seconds: float = Field(default=30.0, ge=0)
    """Longest single wait between retries, including one a server asks for by Retry-After."""
    llm_models_file: Path | None = None
    """A TOML model registry (prices, context windows) applied after the shipped one."""

    planner_token_budget: int = Field(default=24_000, ge=2_000)
    """Most tokens one planner prompt may hold (system prompt, history, tool schemas), counted
    with DeepSeek's tokenizer; capped by the model's context window (model registry)."""
    planner_max_tool_rounds: int = Field(default=5, ge=1, le=50)
    """Tool rounds the planner may make answering one message before it must answer in text."""
    planner_plan_attempts: int = Field(default=3, ge=1, le=10)
    """`create_plan` calls the planner may make per message before an invalid plan fails it."""
    executor_token_budget: int = Field(default=16_000, ge=500)
    """Most tokens one executor prompt may hold. A cap, not a cost: a call pays for what it
    sends. Sized by measurement (`python -m bench.economics`: the largest executor prompt of its
    requests is ~3,700 tokens, a few pages of results) with room for several more pages;
    DeepSeek Flash's window is 1M. Past it results are cut, saying what was left out."""
    executor_max_turns: int = Field(default=6, ge=1, le=50)
    """Model calls one step's agent may make before its thread closes as `timeout`."""
    executor_timeout_seconds: float = Field(default=120.0, gt=0)
    """Wall-clock limit of one step, from its start; past it the thread closes as `timeout`."""
    executor_concurrency: int = Field(default=3, ge=1, le=32)
    """Independent plan steps run at once (per plan)."""
    plan_max_cost_usd: Decimal = Field(default=Decimal("0.50"), gt=0)
    """Cost cap of one plan (all its agents' model calls); reaching it fails the plan cleanly."""
    approvals: Literal["on", "off"] = "on"
    """`on`: destructive tool calls and executors' escalations wait for the user's decision
    (`agent_approvals`); `off`: destructive calls run and escalations fail their step."""
    run_lease_seconds: float = Field(default=30.0, ge=1, le=600)
    """How long a plan's or step's run lease lasts unless renewed (every third of it). Another
    invocation for the same plan or step leaves it alone while the lease is live, and takes
    it over — resuming the work — once a dead runner's lease has expired."""

    tool_timeout_seconds: float = Field(default=30.0, gt=0)
    """Longest a single tool call may run before it is answered with `tool_failed`."""
    mcp_servers: list[McpServerConfig] = []
    """MCP servers whose tools join the registry, as a JSON list, e.g.
    `[{"name": "files", "command": "npx", "args": ["-y", "@mcp/fs", "/data"],
    "read_only_tools": ["read_file"]}]`. Undeclared tools are write tools."""

    realtime_private_channels: bool = True
    """Broadcast on private Realtime channels, readable only by the session's owner (the
    migrations' policy on `realtime.messages`); false: public channels named by the UUID."""
    realtime_quota_per_second: float = Field(default=100, ge=0)
    """The project's Realtime message quota, its plan's: messages a second, averaged over a
    minute (Free 100, Pro 500, Pro without spend cap and Team 2,500; Enterprise as agreed).
    Parley paces its token batches so that all it sends stays under `REALTIME_QUOTA_SHARE` of
    it (docs/events.md); 0: no pacing."""
    realtime_quota_share: float = Field(default=0.8, gt=0, le=1)
    """The fraction of the quota Parley plans to use; the rest is headroom for traffic it does
    not count (other apps on the project, presence, `postgres_changes`)."""
    realtime_subscribers_per_session: int = Field(default=1, ge=1)
    """Clients that watch one session's channel at once (a user's tabs, the console): Realtime
    counts every delivery of a message, so each one costs 1 + this many messages."""
    invoker_transport: Literal["in_process", "http", "sqs"] = "in_process"
    """How chat reaches the planner and the planner its executors: in this process, over HTTP
    to the other functions' URLs, or through SQS queues (AWS: no function waits on another)."""
    invoker_attempts: int = Field(default=3, ge=1, le=10)
    """Tries of a function-to-function call that fails to connect or gets a 5xx/429."""
    invoker_retry_delay_seconds: float = Field(default=1.0, ge=0)
    """Wait before the second try of such a call (doubling for each further one)."""
    planner_function_url: str | None = None
    """The planner function's URL, for `invoker_transport=http` (set by infra/serverless.yml)."""
    executor_function_url: str | None = None
    """The executor function's URL, for `invoker_transport=http` (infra/ deploys with `sqs`)."""
    planner_queue_url: str | None = None
    """The planner's SQS queue ("run plan", "resume plan"), for `invoker_transport=sqs`."""
    executor_queue_url: str | None = None
    """The executors' SQS queue ("run step"), for `invoker_transport=sqs`."""
    planner_dead_letter_queue_url: str | None = None
    """Where the planner queue's messages go after their last failed delivery; the sweeper
    fails their plans."""
    executor_dead_letter_queue_url: str | None = None
    """Where the executor queue's messages go after their last failed delivery; the sweeper
    fails their steps."""
    queue_retry_seconds: float = Field(default=30.0, ge=0, le=900)
    """`sqs`: a message whose handling failed comes back after this many seconds times its
    delivery count (at most 15 minutes), instead of after the queue's visibility timeout."""
    plan_park_seconds: float = Field(default=300.0, ge=10, le=43_200)
    """`sqs`: how long a plan waiting for its queued executor steps counts as running; past
    it, the sweeper hands the plan to the planner again."""
    plan_max_age_seconds: float = Field(default=3600.0, ge=60)
    """A plan still pending or executing this long after it was created, with no live run,
    is failed by the sweeper (one waiting for the user's approval is left waiting)."""
    sweep_interval_seconds: float = Field(default=60.0, gt=0)
    """How often the local stack runs the sweeper (on AWS: the EventBridge schedule)."""
    retention_dialogue_days: int = Field(default=30, ge=0)
    """Days the agents' dialogue of a turn (`agent_chat_messages`, its threads and executor
    agents) is kept after the turn ended; then the sweeper deletes it. 0: kept until the
    session is. What the user sees (sessions, their messages, the answers, plans and steps)
    is kept until they delete the session whatever these say (docs/storage.md)."""
    retention_tool_rounds_days: int = Field(default=30, ge=0)
    """Days the planner's internal tool rounds of a turn (its `chat_messages` calling tools,
    and their results) are kept after the turn ended. 0: kept until the session is."""
    retention_executions_days: int = Field(default=90, ge=0)
    """Days the runs' detail of a turn (`agent_executions`) is kept after the turn ended; the
    dashboards' daily rollups keep their history. 0: kept until the session is."""
    retention_receipts_days: int = Field(default=7, ge=0)
    """Days the write receipts of a turn (`parley_private.tool_call_receipts`: a resumed turn's
    write is not done twice) are kept after the turn ended. 0: kept until the session is."""
    retention_batch_plans: int = Field(default=200, ge=1, le=5000)
    """Turns whose detail one retention statement deletes (each a short transaction of its
    own; a sweep runs batches until it is done or its time is up)."""
    cors_allowed_origins: str = Field(default="*", min_length=1)
    """Origins whose pages may call the local stack's functions (CORS), comma-separated, or
    `*` for any: what infra/serverless.yml's `consoleOrigin` is to the function URLs. Tokens
    travel in `Authorization`, never in cookies, so `*` is safe."""

    auth_signing_algorithm: Literal["ES256", "HS256"] = "ES256"
    """Local stack: how its Auth twin signs sessions: ES256, published as a JWKS that the
    functions and Realtime verify against (as new Supabase projects), or HS256 with the JWT
    secret (projects on the legacy secret)."""

    realtime_host: str = "127.0.0.1"
    """Interface the local Realtime server listens on (`python -m local.realtime`)."""
    realtime_port: int = Field(default=4000, ge=0, le=65535)
    """Port of the local Realtime server (4000, like Supabase Realtime); 0 picks a free one."""
    realtime_connect_error_delay_ms: int = Field(default=2000, ge=0)
    """Local Realtime: delay before refusing a websocket upgrade (Supabase waits 2 s)."""
    realtime_join_error_delay_ms: int = Field(default=5000, ge=0)
    """Local Realtime: delay before a channel join error reply (Supabase waits 5 s)."""
    realtime_change_retention_seconds: int = Field(default=300, ge=1)
    """Local Realtime: how long captured row changes stay in `parley_realtime.changes`."""
    realtime_message_retention_hours: int = Field(default=72, ge=1)
    """Local Realtime: `realtime.messages` partitions older than this are dropped (hosted: 72 h)."""
    realtime_plan: Literal["free", "pro", "pro_no_spend_cap", "team", "enterprise"] = "free"
    """Local Realtime: the hosted plan whose limits it holds clients to (connections, messages,
    joins and presence per second, channels per socket, payload size: 256 KB on Free, 3,000 KB
    on Pro and above). The `REALTIME_MAX_*` settings below override one limit each."""
    realtime_max_concurrent_users: int | None = Field(default=None, ge=1)
    """Local Realtime: sockets with a joined channel at once (default: the plan's; Free 200)."""
    realtime_max_events_per_second: int | None = Field(default=None, ge=1)
    """Local Realtime: broadcast messages per second, sent and delivered (plan's; Free 100)."""
    realtime_max_joins_per_second: int | None = Field(default=None, ge=1)
    """Local Realtime: channel joins per second (the plan's; Free 100)."""
    realtime_max_channels_per_client: int | None = Field(default=None, ge=1)
    """Local Realtime: channels one socket may join (every plan: 100)."""
    realtime_max_presence_events_per_second: int | None = Field(default=None, ge=1)
    """Local Realtime: presence messages per second (the plan's; Free 20)."""
    realtime_max_payload_kb: int | None = Field(default=None, ge=1)
    """Local Realtime: largest broadcast or presence payload, in kB (plan's; Free 256)."""
    realtime_client_presence_max_calls: int = Field(default=5, ge=1)
    """Local Realtime: presence calls one channel may make per window (hosted: 5)."""
    realtime_client_presence_window_ms: int = Field(default=30_000, ge=1)
    """Local Realtime: that window (hosted: 30 s)."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Python logging level."""
    log_format: Literal["text", "json"] = "text"
    """How logs are written off Lambda: readable text with the work's ids after the message,
    or one JSON object per line shaped as Lambda's JSON log format (which the functions use on
    AWS whatever this says: infra/serverless.yml sets it)."""

    otel_exporter_otlp_endpoint: str | None = None
    """OpenTelemetry collector (OTLP/HTTP) base URL, e.g. http://localhost:4318: traces go to
    `<it>/v1/traces`. Setting it turns tracing on (docs/observability.md)."""
    otel_exporter_otlp_traces_endpoint: str | None = None
    """Full OTLP/HTTP URL for traces (wins over the base URL); turns tracing on too."""
    otel_exporter_otlp_headers: SecretStr | None = None
    """Headers sent with each export, `key=value,key2=value2` (a vendor's API key: keep it in
    the stage's secret)."""
    otel_traces_exporter: Literal["otlp", "console", "none"] | None = None
    """`otlp` turns tracing on without an endpoint (the collector at localhost:4318, e.g. a
    Lambda layer's); `console` prints spans; `none` keeps tracing off."""
    otel_sdk_disabled: bool = False
    """True keeps tracing off whatever else is set."""
    otel_instrumentation_genai_capture_message_content: bool = False
    """Model-call spans carry the prompt and the answer (GenAI `gen_ai.input.messages`,
    `gen_ai.output.messages`). Off: only model, tokens and finish reasons — no user text."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Given values, then the environment (the deployed functions add the stage's secret:
        `shared.services.load_settings`). No `.env` file and no secrets directory are read
        (their sources would cost every cold start ~2 ms of looking at each field for
        nothing)."""
        return init_settings, env_settings

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "must be a libpq URL such as postgresql://user:password@host:5432/postgres "
                "(unset it to use the embedded Postgres)"
            )
        return value

    @property
    def jwks_url(self) -> str | None:
        """Where asymmetric JWT signing keys are published, if anywhere."""
        if self.supabase_jwks_url:
            return self.supabase_jwks_url
        return f"{self.supabase_url}/auth/v1/.well-known/jwks.json" if self.supabase_url else None

    @field_validator(
        "supabase_url",
        "supabase_jwks_url",
        "llm_base_url",
        "planner_function_url",
        "executor_function_url",
        "planner_queue_url",
        "executor_queue_url",
        "planner_dead_letter_queue_url",
        "executor_dead_letter_queue_url",
        "otel_exporter_otlp_endpoint",
        "otel_exporter_otlp_traces_endpoint",
    )
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://, e.g. https://abcd.supabase.co")
        return value.rstrip("/")

    @field_validator(
        "llm_models_file",
        "supabase_jwt_secret",
        "otel_exporter_otlp_headers",
        "otel_traces_exporter",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # An empty variable counts as unset (e.g. a JWKS-only deployment's JWT secret).
        return None if value == "" else value

    @field_validator("supabase_jwt_secret")
    @classmethod
    def _long_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError(
                "must be at least 32 characters; copy it from Project settings → API → JWT secret"
            )
        return value
