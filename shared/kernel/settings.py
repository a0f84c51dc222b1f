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
    """Parley's configuration: one environment variable per field.

    Each field's docstring is its entry in the configuration reference
    (`docs/reference/configuration.md`, generated from them at build time).
    """

    model_config = SettingsConfigDict(extra="ignore", frozen=True, case_sensitive=False)

    settings_secret_id: str | None = None
    """A Secrets Manager secret (name or ARN) holding settings as one JSON object, keys named
    like these variables (`{"DATABASE_URL": "…", "LLM_API_KEY": "…"}`): read once, when the
    settings are, with the process's AWS credentials, by Parley's own signed client (no boto3 on
    Lambda); a variable set in the environment wins over the secret's. How the deployed functions
    get every secret (`docs/reference/aws.md`, *Secrets*)."""

    database_url: str | None = None
    """Postgres URL (on Supabase: the transaction-pooler string). Unset: the local stack and the
    tests use an embedded Postgres under `PARLEY_DATA_DIR`."""
    parley_data_dir: Path = Path(".parley")
    """Local state: the embedded Postgres cluster."""
    db_pool_max_size: int = Field(default=2, ge=1, le=50)
    """Connections per process; keep 1–2 per Lambda behind Supavisor (`python3 dev.py run`, a
    long-running server, uses 8)."""
    max_running_turns: int = Field(default=64, ge=0)
    """Turns one process runs at once; a send past it is answered `503` with `Retry-After`,
    nothing stored (admission control; `0`: no limit)."""
    retry_after_seconds: int = Field(default=1, ge=1)
    """The `Retry-After` of those `503`s."""

    supabase_url: str | None = None
    """Project URL, e.g. `https://abcd.supabase.co`; token batches are broadcast there
    (Realtime's REST endpoint; every other event is sent from the database) and JWKS is found
    there."""
    supabase_anon_key: SecretStr | None = None
    """The project's anon (publishable) key."""
    supabase_service_role_key: SecretStr | None = None
    """Service-role key; authorises the REST broadcasts of token batches. Never sent to clients."""
    supabase_jwt_secret: SecretStr | None = None
    """HS256 secret user JWTs are signed with (Project settings → JWT Keys → Legacy JWT secret);
    at least 32 characters. Empty or unset: tokens are verified with the project's published
    signing keys only (`SUPABASE_JWKS_URL`). Locally: `supabase start`'s public secret, which
    signs the legacy API keys."""
    supabase_jwks_url: str | None = None
    """Published keys for projects on asymmetric JWT signing keys. Unset:
    `{SUPABASE_URL}/auth/v1/.well-known/jwks.json`."""

    llm_base_url: str = "https://api.deepseek.com"
    """Any OpenAI-compatible endpoint (DeepSeek, OpenAI, Ollama, vLLM, OpenRouter)."""
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("LLM_API_KEY", "DEEPSEEK_API_KEY")
    )
    """Key for `LLM_BASE_URL` (`DEEPSEEK_API_KEY` is read too). Not needed for a server on this
    machine or a private network (Ollama, vLLM). Check a key with `python3 dev.py check-model`
    (`docs/how-to/connect-a-model.md`). A key the provider refuses (401/403) or an account out of
    balance (402) fails a turn with a plain message to the user and an error in the log naming
    the setting; neither is retried."""
    llm_planner_model: str = "deepseek-v4-pro"
    """The planner's (stronger) model. With `LLM_BASE_URL` at DeepSeek's API (`api.deepseek.com`,
    the default), a name the model registry knows to be retired there (`deepseek-chat`,
    `deepseek-reasoner`, `deepseek-coder`) stops Parley at start with a message naming the
    variable and the replacement (`python3 dev.py run` prints it and exits 2); another endpoint
    (OpenRouter's `deepseek/deepseek-chat`, a proxy) is left to serve or refuse it."""
    llm_executor_model: str = "deepseek-flash"
    """The executors' (cheap, fast) model; it also writes the final answer of a plan that only
    gathers results (`answer: "executor"`), with the planner's prompt, budget and thinking
    setting. Same check."""
    llm_planner_thinking: Thinking = "auto"
    """The planner's thinking mode, sent as DeepSeek's `thinking` field: `enabled`, `disabled`,
    or `auto` (the model's default — DeepSeek V4 thinks). Only models with a thinking switch in
    the registry are told. A thinking agent's plan steps ask for their tool calls with
    `tool_choice: "auto"` (DeepSeek refuses `required` in thinking mode) and are reminded when
    they answer in text; three such turns in a row fail the step (`docs/deepseek.md`)."""
    llm_executor_thinking: Thinking = "disabled"
    """The executors' thinking mode. Executors are short tool loops: thinking would cost output
    tokens (the dearest kind) and latency on every turn; off, their calls are forced with
    `tool_choice: "required"`."""
    llm_timeout_seconds: float = Field(default=60.0, gt=0)
    """Longest wait for any network step of an LLM call: connecting, the first byte, each gap
    between streamed chunks."""
    llm_max_retries: int = Field(default=3, ge=0, le=10)
    """Retries on 429/5xx/connection errors/timeouts, with exponential backoff and full jitter; a
    server's `Retry-After` is honoured."""
    llm_retry_base_delay_seconds: float = Field(default=0.5, ge=0)
    """First backoff ceiling; it doubles per retry, and the wait is drawn uniformly below it."""
    llm_retry_max_delay_seconds: float = Field(default=30.0, ge=0)
    """Longest single wait between retries, `Retry-After` included."""
    llm_models_file: Path | None = None
    """A TOML model registry (patterns, peak and off-peak prices, peak-hour schedules, context
    windows, retired names) applied over the shipped `shared/llm/models.toml`."""

    planner_token_budget: int = Field(default=24_000, ge=2_000)
    """Most tokens one planner prompt may hold (system prompt, history, tool schemas), counted
    with DeepSeek's tokenizer; capped by the model's context window. The final answer's prompt
    drops old history before it cuts this turn's results; an answer written from cut results says
    so."""
    planner_max_tool_rounds: int = Field(default=5, ge=1, le=50)
    """Tool rounds the planner may make for one message before it must answer in text."""
    planner_plan_attempts: int = Field(default=3, ge=1, le=10)
    """`create_plan` calls per message before invalid plans fail the turn."""
    executor_token_budget: int = Field(default=16_000, ge=500)
    """Most tokens one executor prompt may hold — a cap, not a cost (a call pays for what it
    sends). Sized by measurement: the benchmark's largest executor prompt is ~3,700 tokens. Past
    it, results are cut with a note saying what was left out and how to get it."""
    executor_max_turns: int = Field(default=6, ge=1, le=50)
    """Model calls one plan step may make before its thread closes as `timeout`."""
    executor_timeout_seconds: float = Field(default=120.0, gt=0)
    """Wall-clock limit of one plan step; past it the thread closes as `timeout`."""
    executor_concurrency: int = Field(default=3, ge=1, le=32)
    """Independent plan steps run at once, per plan."""
    plan_max_cost_usd: Decimal = Field(default=Decimal("0.50"), gt=0)
    """Cost cap of one plan (every agent's model calls); reaching it fails the plan cleanly."""
    approvals: Literal["on", "off"] = "on"
    """`on`: destructive tool calls (e.g. `delete_calendar_event`) and executors' escalations
    wait for the user's decision (`agent_approvals`); `off`: destructive calls run and
    escalations fail their step."""
    run_lease_seconds: float = Field(default=30.0, ge=1, le=600)
    """Length of a plan's or step's run lease, renewed every third of it while the run works. A
    second invocation for the same plan or step returns at once while the lease is live; once a
    dead runner's lease has expired, the next invocation takes over and resumes."""

    tool_timeout_seconds: float = Field(default=30.0, gt=0)
    """Longest a single tool call may run before the model is told it failed."""
    mcp_servers: list[McpServerConfig] = []
    """MCP servers whose tools join the registry, as JSON: `[{"name": "files", "command": "npx",
    "args": [...], "read_only_tools": ["read_file"]}]` (or `"url"` for streamable HTTP). Tools
    not listed in `read_only_tools` are write tools. Needs the MCP SDK, the optional
    `parley[mcp]` (in the dev environment; for Lambda, `infra/build.py --extra mcp`): without it
    the servers are logged once and left out. Connected where agents run — the planner and
    executors, and the chat only when it runs them itself (`in_process`): a deployed chat never
    imports the SDK. Servers' tokens belong in the stage's secret, not in the function's
    configuration."""

    realtime_private_channels: bool = True
    """Broadcast each session's events on the private channel `session:<id>`, readable only by
    the session's owner (an RLS policy on `realtime.messages` from the migrations); `false`:
    public channels, protected only by the UUID."""
    realtime_quota_per_second: float = Field(default=100, ge=0)
    """The project's Realtime message quota, its Supabase plan's: Free `100`, Pro `500`, Pro
    without spend cap and Team `2500`, Enterprise as agreed ([Realtime
    limits](https://supabase.com/docs/guides/realtime/limits)). Token batches are paced so
    everything Parley sends stays under `REALTIME_QUOTA_SHARE` of it (`docs/events.md`, *Token
    batches and the project's quota*); `0`: no pacing. Locally: the local Realtime's own limit
    unless set."""
    realtime_quota_share: float = Field(default=0.8, gt=0, le=1)
    """The fraction of the quota Parley plans to use; the rest is headroom for what it does not
    count (other apps on the project, presence, `postgres_changes`)."""
    realtime_subscribers_per_session: int = Field(default=1, ge=1)
    """Clients watching one session's channel at once (a user's tabs, the console): Realtime
    counts every delivery, so a batch costs 1 + this many messages."""
    invoker_transport: Literal["in_process", "http", "sqs"] = "in_process"
    """How chat reaches the planner and the planner its executors: `in_process`, `http` to the
    function URLs, or `sqs` (AWS: queues, nothing waits; `POST /chat` answers 202). With `sqs`,
    messages are sent by Parley's own SQS client (SigV4-signed over `http.client`, no boto3: the
    chat function never loads it) with the credentials Lambda gives the function — in the
    environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), or with
    SnapStart from its credentials endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI` and its token),
    refreshed before they expire — and the region (`AWS_REGION`); requests go to
    `AWS_ENDPOINT_URL_SQS` when set. Where neither is found, or behind `HTTPS_PROXY`, boto3
    (`parley[aws]`) sends, finding credentials its own ways (profiles, SSO, instance roles)."""
    invoker_attempts: int = Field(default=3, ge=1, le=10)
    """Tries of a function-to-function call that fails to connect or gets a 5xx/429 (the targets
    are idempotent)."""
    invoker_retry_delay_seconds: float = Field(default=1.0, ge=0)
    """Wait before the second try of such a call, doubling after."""
    planner_function_url: str | None = None
    """The planner function's URL: where the `http` transport sends plans, and the base of a
    202's `Location` and `watch.plan` (relative `/plans/{id}` when unset). Set for chat by
    `infra/serverless.yml`."""
    executor_function_url: str | None = None
    """The executor function's URL, for the `http` transport (the deployment in `infra/` uses
    `sqs`, and gives the executor no URL)."""
    planner_queue_url: str | None = None
    """The planner's SQS queue ("run plan", "resume plan"), for `sqs` (set by
    `infra/serverless.yml`)."""
    executor_queue_url: str | None = None
    """The executors' SQS queue ("run step"), for `sqs`."""
    planner_dead_letter_queue_url: str | None = None
    """The planner queue's dead-letter queue; the sweeper fails the plans of its messages."""
    executor_dead_letter_queue_url: str | None = None
    """The executor queue's dead-letter queue; the sweeper fails the steps of its messages."""
    queue_retry_seconds: float = Field(default=30.0, ge=0, le=900)
    """`sqs`: a message whose handling failed comes back after this × its delivery count (at most
    15 min)."""
    plan_park_seconds: float = Field(default=300.0, ge=10, le=43_200)
    """`sqs`: how long a plan waiting for its queued executor steps counts as running; then the
    sweeper re-drives it."""
    plan_max_age_seconds: float = Field(default=3600.0, ge=60)
    """A plan still pending or executing this long after creation, with no live run, is failed by
    the sweeper (one waiting for approval keeps waiting)."""
    sweep_interval_seconds: float = Field(default=60.0, gt=0)
    """How often `python3 dev.py run` runs the sweeper (on AWS: the EventBridge schedule)."""
    retention_dialogue_days: int = Field(default=30, ge=0)
    """Days the agents' dialogue of a turn (their messages and executor agents) is kept after
    the turn ended; then the sweeper deletes it. `0`: kept as long as the session. What the
    user sees — sessions, their messages, the answers, plans, steps, approvals — is kept until
    they delete the session whatever these say (`docs/storage.md`: what each keeps, how to size
    them per Supabase plan)."""
    retention_tool_rounds_days: int = Field(default=30, ge=0)
    """Days the planner's internal tool rounds of a turn (its tool calls and their results) are
    kept after the turn ended. `0`: as long as the session."""
    retention_executions_days: int = Field(default=90, ge=0)
    """Days the runs' detail of a turn (`agent_executions`: each run's tokens, cost, timing, and
    each step's thread) is kept; the dashboards' daily rollups keep their history, the plan its
    totals. `0`: as long as the session."""
    retention_receipts_days: int = Field(default=7, ge=0)
    """Days the write receipts of a turn (`parley_private.tool_call_receipts`) are kept after it
    ended. `0`: as long as the session."""
    retention_deleted_sessions_days: int = Field(default=30, ge=0)
    """Days a session its user deleted (`DELETE /sessions/{id}`: every route answers 404 for it
    at once) is kept before the sweeper deletes it for good, with everything of it — messages,
    plans, steps, approvals, the agents and their dialogue, the runs. The dashboards' rollups
    keep their counts. `0`: deleted sessions are kept."""
    retention_batch_plans: int = Field(default=200, ge=1, le=5000)
    """Turns whose detail one retention statement deletes (each statement its own short
    transaction; a sweep spends at most 20 s on retention, the rest waits for the next)."""
    cors_allowed_origins: str = Field(default="*", min_length=1)
    """Origins whose pages may call the functions of `python3 dev.py run` (CORS),
    comma-separated, `*` for any — so a frontend on its own dev server (e.g.
    `http://localhost:5173`) works locally. The same rules as the deployed function URLs, whose
    origins are the stage's `consoleOrigin` (`infra/serverless.yml`): headers `Authorization`,
    `Content-Type`, `Prefer`; `Location`, `Preference-Applied` and the `X-Parley-*` ids readable."""

    auth_signing_algorithm: Literal["ES256", "HS256"] = "ES256"
    """Local stack: how its Supabase Auth signs sessions — `ES256` with a key kept in
    `.parley/auth/signing-key.json` and published as a JWKS (new projects), or `HS256` with the
    JWT secret (projects on the legacy secret)."""

    realtime_host: str = "127.0.0.1"
    """Local Realtime server (`python -m local.realtime`): interface to listen on."""
    realtime_port: int = Field(default=4000, ge=0, le=65535)
    """Local Realtime server: port (0 picks a free one)."""
    realtime_connect_error_delay_ms: int = Field(default=2000, ge=0)
    """Local Realtime server: delay before refusing a websocket upgrade, as Supabase does."""
    realtime_join_error_delay_ms: int = Field(default=5000, ge=0)
    """Local Realtime server: delay before a channel join error reply, as Supabase does."""
    realtime_change_retention_seconds: int = Field(default=300, ge=1)
    """Local Realtime server: how long captured row changes are kept."""
    realtime_message_retention_hours: int = Field(default=72, ge=1)
    """Local Realtime server: daily `realtime.messages` partitions older than this are dropped
    (hosted: 72 h)."""
    realtime_plan: Literal["free", "pro", "pro_no_spend_cap", "team", "enterprise"] = "free"
    """Local Realtime server: the hosted plan whose limits it holds clients to (`free`, `pro`,
    `pro_no_spend_cap`, `team`, `enterprise`; figures from Supabase's Realtime limits page,
    `local/realtime/plans.py`). The `REALTIME_MAX_*` settings below override one limit each;
    unset, they are the plan's."""
    realtime_max_concurrent_users: int | None = Field(default=None, ge=1)
    """Local Realtime server: sockets with a joined channel at once; beyond, new sockets get HTTP
    429 and joins `ConnectionRateLimitReached`. Unset: the plan's (Free 200)."""
    realtime_max_events_per_second: int | None = Field(default=None, ge=1)
    """Local Realtime server: broadcasts per second (sent, and delivered to each channel),
    averaged over a minute; beyond, channels are closed with "Too many messages per second", REST
    broadcasts get 429 and database broadcasts are dropped. Unset: the plan's (Free 100)."""
    realtime_max_joins_per_second: int | None = Field(default=None, ge=1)
    """Local Realtime server: channel joins per second; beyond, a join gets
    `ClientJoinRateLimitReached` and its socket is closed, and new sockets get HTTP 429. Unset:
    the plan's (Free 100)."""
    realtime_max_channels_per_client: int | None = Field(default=None, ge=1)
    """Local Realtime server: channels one socket may join; beyond, `ChannelRateLimitReached: Too
    many channels`. Unset: the plan's (100 on every plan)."""
    realtime_max_presence_events_per_second: int | None = Field(default=None, ge=1)
    """Local Realtime server: presence tracks and deliveries per second; beyond, channels are
    closed with "Too many presence messages per second". Unset: the plan's (Free 20)."""
    realtime_max_payload_kb: int | None = Field(default=None, ge=1)
    """Local Realtime server: largest broadcast or presence payload, in kB (hosted adds 500 bytes
    of slack); beyond, an acked broadcast is answered "Payload size exceeded", a REST broadcast
    422, a presence track closes the channel. Unset: the plan's (Free 256, Pro and above 3000)."""
    realtime_client_presence_max_calls: int = Field(default=5, ge=1)
    """Local Realtime server: presence calls (track, untrack) one channel may make per window;
    the next closes it with "Client presence rate limit exceeded"."""
    realtime_client_presence_window_ms: int = Field(default=30_000, ge=1)
    """Local Realtime server: that window."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Python logging level of the functions and the local stack (on AWS also Lambda's
    application log level, `infra/`); HTTP clients' line per request is kept from `WARNING`.
    Every line carries the ids of the work it is about (`docs/observability.md`)."""
    log_format: Literal["text", "json"] = "text"
    """Off Lambda: `text` (readable, the ids after the message) or `json` (one object per line,
    shaped as Lambda's JSON log format). On Lambda the runtime writes Lambda's JSON format
    (`infra/` sets it)."""

    otel_exporter_otlp_endpoint: str | None = None
    """An OpenTelemetry collector's OTLP/HTTP base URL (`http://localhost:4318`); traces go to
    `<it>/v1/traces`. Setting it turns tracing on; needs `parley[otel]` (the Lambda bundle:
    `infra/build.py --extra otel`). Off, nothing of the SDK is imported."""
    otel_exporter_otlp_traces_endpoint: str | None = None
    """A full OTLP/HTTP URL for traces (wins over the base URL); turns tracing on too."""
    otel_exporter_otlp_headers: SecretStr | None = None
    """Headers sent with each export, `key=value,key2=value2` (URL-encoded values): a vendor's
    API key — keep it in the stage's secret."""
    otel_traces_exporter: Literal["otlp", "console", "none"] | None = None
    """`otlp` turns tracing on without an endpoint (a collector at `localhost:4318`, e.g. a
    Lambda layer's); `console` prints spans to stdout; `none` keeps tracing off. The SDK reads
    the other standard variables itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
    `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_TIMEOUT`, …)."""
    otel_sdk_disabled: bool = False
    """`true` keeps tracing off whatever else is set."""
    otel_instrumentation_genai_capture_message_content: bool = False
    """`true`: model-call spans carry the prompt and the answer (`gen_ai.input.messages`,
    `gen_ai.output.messages`, `gen_ai.system_instructions`) — user data in your tracing backend.
    Off: model, tokens, cache hits, finish reasons, cost; no text."""

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
