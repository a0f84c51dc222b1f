"""Benchmark: a function's cold start — importing its handler, then its first and warm turns.

    .venv/bin/python -m bench.cold_start [--rounds 5]

Each figure comes from a fresh Python process, as a new Lambda execution environment would
start one. The imports run as a deployment on Parley's default models has them (the registry it
ships); the turns run on the tests' models, declared in an override file (`LLM_MODELS_FILE`).
Per round, interleaved so that the machine's load falls on all alike:

* `import openai` and `import fastapi` alone — the yardsticks — and the libraries the chat
  function cannot start without (FastAPI, Mangum, psycopg and its pool, PyJWT with
  `cryptography`, pydantic-settings) with a one-route app: the floor under Parley's own import;
* `import functions.<name>.handler` for each of the three functions;
* the chat handler imported, then two direct turns through it (`POST /chat` as a function
  URL event through Mangum, the fake model answering at once), the planner running in the
  chat's process (`INVOKER_TRANSPORT=in_process`, the local stack's way): the first invoke
  pays for everything a turn loads on first use; the second is warm;
* the chat function as deployed (`INVOKER_TRANSPORT=sqs`): import, then two sends answered
  `202` once the turn is on the planner's queue. moto's SQS runs as a server in this process
  (the benchmark's), where the queues are made; the chat's process gets only the queue URLs
  and fake credentials, so its first `202` includes everything its send path loads, as on
  Lambda. It reports whether boto3 or botocore got loaded (the send path needs neither: it
  speaks SQS's HTTP API itself, `shared.queues.sqs_http`);
* the same with MCP configured (`MCP_SERVERS`: the tests' stdio echo server): the chat never
  runs the planner, so its first `202` must load nothing of MCP's; the line says which of
  `mcp`'s modules, if any, its process imported;
* the same with its secrets in the stage's Secrets Manager secret (`SETTINGS_SECRET_ID`, on
  moto's server), as infra/serverless.yml deploys it: its import includes reading the secret;
  and that read timed alone, by Parley's client and by boto3's;
* the planner function as deployed: import, then the "run plan" messages of those sends,
  each as the SQS event Lambda delivers (the model answers them at once, its text streamed as
  `token` events): the first run pays for whatever the function loads on first use rather than
  at init — the Realtime broadcast's HTTP client among it: the tokens go to the local Realtime
  server (`local.realtime`, run in this process), which counts the messages it received;
* tracing on (`OTEL_EXPORTER_OTLP_ENDPOINT`: an OTLP receiver in this process,
  `tests.support.otlp_receiver`, which counts the spans it gets): the chat handler's import, and the
  deployed chat's and planner's import, first and warm invocations — each exports its spans
  before it returns; the planner's runs continue the chat's traces (the messages'
  `traceparent`). Off, no OpenTelemetry module is loaded: the import lines count the modules
  each import loaded, and OpenTelemetry's among them;
* `import boto3` + an SQS client, timed on its own: what the first `202` would add if the
  send path used boto3.

Prints the median and the minimum of each over the rounds, and the ratios the performance
targets use: chat handler import ÷ `import openai`, Parley's own share of it (the handler's
import less the libraries' floor) ÷ `import openai` — of wall time and of CPU time (the
imports' CPU time moves far less than their wall time with a shared machine's load) — and
first turn ÷ warm turn — and Parley's own share measured directly: the chat handler imported
on top of the floor, in the process that has just imported it. Parley's own code is
byte-compiled first, as the Lambda bundle ships it (installed packages have their bytecode).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

from local.realtime import RealtimeConfig, RealtimeServer
from shared.auth.access_tokens import User
from tests.functions.conftest import SECRET, token
from tests.support.moto_server import FAKE_AWS, NOT_INHERITED, environment, moto_server
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver
from tests.support.turn_kinds import Harness, harness

ROOT = Path(__file__).resolve().parents[1]
EVENT = ROOT / "tests" / "support" / "lambda_events" / "chat_send_message.json"
HANDLERS = ("chat", "agent_planner", "agent_executor")

IMPORT = """
import sys, time
started, cpu = time.perf_counter(), time.process_time()
import {module}
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
otel = sum(1 for m in sys.modules if m.split(".")[0] == "opentelemetry")
print(wall, cpu, len(sys.modules), otel)
"""
TRACED_IMPORT = "import functions.chat.handler (tracing on)"

LIBRARIES = """
import time
started, cpu = time.perf_counter(), time.process_time()
import fastapi, mangum, psycopg, psycopg_pool, jwt, pydantic_settings
app = fastapi.FastAPI()
@app.get("/n")
async def n(n: int) -> dict[str, int]:
    return {"n": n}
floor = time.perf_counter() - started, time.process_time() - cpu
started, cpu = time.perf_counter(), time.process_time()
import functions.chat.handler
print(*floor, time.perf_counter() - started, time.process_time() - cpu)
"""
"""The libraries' floor — then, in the same process, the chat handler on top of it: Parley's own
share measured as such, not as the difference of two imports from separate processes."""
ON_FLOOR = "import functions.chat.handler on the floor"
ON_FLOOR_VERSUS = ON_FLOOR + ", versus"
ON_FLOOR_MODELS_FILE = ON_FLOOR + ", the tests' LLM_MODELS_FILE"
"""The same with the override file the turns here need (their test models): init checks it."""
VERSUS = "import functions.chat.handler, versus"
"""The `--versus` checkout's chat handler, imported in the same rounds."""
CPU = " (CPU)"
"""Suffix of an import's CPU time (`process_time`): an import is CPU work, and its CPU time
moves far less than its wall time with the load of a shared machine."""
LIBRARIES_LINE = "import the chat's libraries, one route"

TURNS = """
import json, sys, time
started = time.perf_counter()
from functions.chat.handler import handler
imported = time.perf_counter() - started
event = json.loads(sys.argv[1])
times = []
for n in range(2):
    body = {"message": "hi", "client_message_id": f"{sys.argv[2]}-{n}", "wait": True}
    event["body"] = json.dumps(body)
    event["headers"].pop("prefer", None)
    started = time.perf_counter()
    response = handler(event, None)
    times.append(time.perf_counter() - started)
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["status"] == "completed", response["body"]
print(json.dumps({"import": imported, "first": times[0], "warm": times[1]}))
"""


QUEUED = """
import json, sys, time
started = time.perf_counter()
from functions.chat.handler import handler
imported = time.perf_counter() - started
event = json.loads(sys.argv[1])
times = []
for n in range(2):
    body = {"message": "hi", "client_message_id": f"{sys.argv[2]}-{n}"}
    event["body"] = json.dumps(body)
    started = time.perf_counter()
    response = handler(event, None)
    times.append(time.perf_counter() - started)
    assert response["statusCode"] == 202, response
aws_sdk = sorted({m.split(".")[0] for m in sys.modules} & {"boto3", "botocore"})
mcp = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types"))
print(json.dumps({"import": imported, "first": times[0], "warm": times[1], "aws_sdk": aws_sdk,
                  "mcp": len(mcp)}))
"""
TRACED = ", tracing on"
"""The deployed chat and planner exporting their spans (`OTEL_EXPORTER_OTLP_ENDPOINT`)."""
MCP_ECHO = ROOT / "tests" / "support" / "mcp_echo_server.py"
SECRETS = (ROOT / "shared" / "aws" / "secrets.py").exists()
"""Whether this tree reads a stage's secret (a checkout from before it is measured without)."""
MODES = ("", ", MCP configured", *((", settings from the secret",) if SECRETS else ()))
"""The deployed chat as is, with MCP servers configured, with its settings in the secret."""

PLANNED = """
import json, sys, time
started = time.perf_counter()
from functions.agent_planner.handler import handler
imported = time.perf_counter() - started
times = []
for event in json.loads(sys.argv[1]):
    started = time.perf_counter()
    response = handler(event, None)
    times.append(time.perf_counter() - started)
    assert response == {"batchItemFailures": []}, response
print(json.dumps({"import": imported, "first": times[0], "warm": times[1]}))
"""

SECRET_OWN_LINE = "read the stage's secret: Parley's client"
SECRET_OWN = """
import sys, time
import shared.kernel.settings  # a function has it loaded: the read is what comes on top
started = time.perf_counter()
from shared.aws.secrets import secret_settings
assert secret_settings(sys.argv[1])
print(time.perf_counter() - started)
"""
SECRET_BOTO3_LINE = "read the stage's secret: boto3"
SECRET_BOTO3 = """
import json, sys, time
import shared.kernel.settings
started = time.perf_counter()
import boto3
answer = boto3.client("secretsmanager").get_secret_value(SecretId=sys.argv[1])
assert json.loads(answer["SecretString"])
print(time.perf_counter() - started)
"""
BOTO3_LINE = "import boto3 + SQS client"
BOTO3 = """
import time
started = time.perf_counter()
import boto3
boto3.client("sqs", region_name="eu-central-1")
print(time.perf_counter() - started)
"""


def child(code: str, env: dict[str, str], *args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def compile_code(*roots: Path) -> None:
    """Bytecode for Parley's modules, as the bundle ships it (a checkout may have none:
    `PYTHONDONTWRITEBYTECODE` is set in many environments) — checked against the source's hash,
    so a later edit is never hidden by a stale `.pyc` (the bundle's are unchecked: it never
    changes)."""
    folders = [
        str(root / name)
        for root in (ROOT, *roots)
        for name in ("shared", "functions")
        if (root / name).is_dir()
    ]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash", *folders],
        check=True,
    )


@contextmanager
def realtime_server(database_url: str) -> Iterator[tuple[str, list[int]]]:
    """The local Realtime server on a free port, on an event loop of its own in this process
    (children broadcast to it over HTTP, as a Lambda to Supabase): its URL, and a one-item list
    counting the broadcast messages it has received."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="realtime", daemon=True)
    thread.start()
    unlimited = 1_000_000  # hosted's 100 messages/s would drop a fast turn's tokens
    config = RealtimeConfig(
        database_url=database_url, jwt_secret=SECRET, port=0, max_events_per_second=unlimited
    )
    server = RealtimeServer(config)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=60)
    received = [0]
    assert server.engine is not None
    hub = server.engine.hub
    publish = hub.publish

    def counted(*args: Any, **kwargs: Any) -> Any:
        received[0] += 1
        return publish(*args, **kwargs)

    hub.publish = counted  # type: ignore[method-assign]
    try:
        yield server.url, received
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def child_environment(h: Harness) -> dict[str, str]:
    env = h.environment()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def shipped_models(env: dict[str, str]) -> dict[str, str]:
    """The imports' environment: a deployment's, on Parley's default models and the registry it
    ships — not the test models the turns here need, nor the override file that declares them
    (`LLM_MODELS_FILE`), whose check at init (~2–3 ms) the line "…, the tests' LLM_MODELS_FILE"
    shows apart."""
    dropped = ("LLM_MODELS_FILE", "LLM_PLANNER_MODEL", "LLM_EXECUTOR_MODEL")
    return {name: value for name, value in env.items() if name not in dropped}


def queued_environment(env: dict[str, str], endpoint: str, realtime: str) -> dict[str, str]:
    """The deployed functions' environment: the planner's and executor's queues, made here on
    moto's server at `endpoint`, fake credentials (no real account is ever reachable;
    `AWS_ENDPOINT_URL_SQS` would point a boto3 client at the server, had one been built), and
    the local Realtime server at `realtime` as the project's (token broadcasts go there)."""
    import boto3

    sqs = boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name=FAKE_AWS["AWS_REGION"],
        aws_access_key_id=FAKE_AWS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_AWS["AWS_SECRET_ACCESS_KEY"],
    )
    queues = {
        f"{name.upper()}_QUEUE_URL": sqs.create_queue(QueueName=f"cold-{name}")["QueueUrl"]
        for name in ("planner", "executor")
    }
    kept = {name: value for name, value in env.items() if name not in NOT_INHERITED}
    supabase = {"SUPABASE_URL": realtime, "SUPABASE_SERVICE_ROLE_KEY": token(role="service_role")}
    return {**kept, **environment(endpoint), **queues, **supabase, "INVOKER_TRANSPORT": "sqs"}


def with_secret(env: dict[str, str], endpoint: str) -> tuple[dict[str, str], str]:
    """`env` as infra/serverless.yml configures a function: the database URL and the JWT
    secret only in the stage's secret (made here on moto's Secrets Manager), which
    `SETTINGS_SECRET_ID` names; and that name."""
    import boto3

    secrets = boto3.client(
        "secretsmanager",
        endpoint_url=endpoint,
        region_name=FAKE_AWS["AWS_REGION"],
        aws_access_key_id=FAKE_AWS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_AWS["AWS_SECRET_ACCESS_KEY"],
    )
    name = f"parley/bench-{uuid4().hex[:8]}"
    held = ("DATABASE_URL", "SUPABASE_JWT_SECRET", "SUPABASE_SERVICE_ROLE_KEY")
    secrets.create_secret(Name=name, SecretString=json.dumps({k: env[k] for k in held}))
    kept = {k: v for k, v in env.items() if k not in held}
    return {**kept, "SETTINGS_SECRET_ID": name, "AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint}, name


def traced(env: dict[str, str], receiver: OtlpReceiver) -> dict[str, str]:
    """`env` with tracing on, exporting to `receiver` (as to a collector)."""
    return {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}


def with_mcp(env: dict[str, str]) -> dict[str, str]:
    """`env` with one MCP server configured: the tests' stdio echo server."""
    server = {"name": "echo", "command": sys.executable, "args": [str(MCP_ECHO)]}
    return {**env, "MCP_SERVERS": json.dumps([server])}


def planner_events(env: dict[str, str], endpoint: str, expected: int = 2) -> str:
    """The "run plan" messages the deployed chat queued, taken off the planner's queue, each as
    the SQS event Lambda's event source mapping would deliver (JSON: a list of events)."""
    import boto3

    sqs = boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name=FAKE_AWS["AWS_REGION"],
        aws_access_key_id=FAKE_AWS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_AWS["AWS_SECRET_ACCESS_KEY"],
    )
    url = env["PLANNER_QUEUE_URL"]
    messages = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    assert len(messages) == expected, f"expected {expected} messages, found {len(messages)}"
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    records = [
        {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": {"ApproximateReceiveCount": "1"},
            "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:{FAKE_AWS['AWS_REGION']}:123456789012:cold-planner",
            "messageAttributes": {
                name: {"stringValue": value["StringValue"], "dataType": "String"}
                for name, value in m.get("MessageAttributes", {}).items()
            },
        }
        for m in messages
    ]
    return json.dumps([{"Records": [record]} for record in records])


def event_for(user: User) -> str:
    return EVENT.read_text().replace("{{TOKEN}}", token(user.id))


def timed(figures: dict[str, list[float]], name: str, printed: str, *, at: int = 0) -> None:
    """Record an import's wall time under `name`, its CPU time under `name` + `CPU` (the two
    figures from position `at` of the printed line)."""
    wall, cpu = (float(part) for part in printed.split()[at : at + 2])
    figures.setdefault(name, []).append(wall)
    figures.setdefault(name + CPU, []).append(cpu)


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def min_ms(values: list[float]) -> float:
    return min(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--versus",
        type=Path,
        metavar="CHECKOUT",
        help="also import the chat handler of another checkout (e.g. the commit before a "
        "change) in every round, beside this one's: on a shared machine only figures taken "
        "side by side compare",
    )
    args = parser.parse_args()

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server: no request log
    with (
        harness() as h,
        moto_server() as endpoint,
        realtime_server(h.url) as (realtime, got),
        otlp_receiver() as receiver,
    ):
        env = child_environment(h)
        default_env = shipped_models(env)
        queued_env = queued_environment(env, endpoint, realtime)
        secret_env, secret = with_secret(queued_env, endpoint)
        event = event_for(asyncio.run(h.user()))
        compile_code(*([args.versus] if args.versus else []))
        figures: dict[str, list[float]] = {}
        seen: dict[str, set[str]] = {"aws_sdk": set(), "mcp": set()}
        counts: dict[str, set[tuple[int, int]]] = {}
        broadcasts: list[int] = []
        spans: list[int] = []
        for _ in range(args.rounds):
            imports = [
                (f"import {m}", m, default_env)
                for m in ("openai", "fastapi", *(f"functions.{n}.handler" for n in HANDLERS))
            ]
            imports.append((TRACED_IMPORT, "functions.chat.handler", traced(default_env, receiver)))
            for line, module, import_env in imports:
                printed = child(IMPORT.format(module=module), import_env)
                timed(figures, line, printed)
                modules, otel = (int(part) for part in printed.split()[2:4])
                counts.setdefault(line, set()).add((modules, otel))
            floor_and_chat = child(LIBRARIES, default_env)
            timed(figures, LIBRARIES_LINE, floor_and_chat)
            timed(figures, ON_FLOOR, floor_and_chat, at=2)
            timed(figures, ON_FLOOR_MODELS_FILE, child(LIBRARIES, env), at=2)
            if args.versus:
                code = IMPORT.format(module="functions.chat.handler")
                timed(figures, VERSUS, child(code, default_env, cwd=args.versus.resolve()))
                versus = child(LIBRARIES, default_env, cwd=args.versus.resolve())
                timed(figures, ON_FLOOR_VERSUS, versus, at=2)
            turns = json.loads(child(TURNS, env, event, uuid4().hex))  # new turns
            for key, value in turns.items():
                figures.setdefault(f"chat in_process: {key}", []).append(value)
            figures.setdefault(BOTO3_LINE, []).append(float(child(BOTO3, env)))
            for line, code in ((SECRET_OWN_LINE, SECRET_OWN), (SECRET_BOTO3_LINE, SECRET_BOTO3)):
                if SECRETS:
                    figures.setdefault(line, []).append(float(child(code, secret_env, secret)))
            environments = (queued_env, with_mcp(queued_env), secret_env)[: len(MODES)]
            for mode, mode_env in zip(MODES, environments, strict=True):
                queued = json.loads(child(QUEUED, mode_env, event, uuid4().hex))
                seen["aws_sdk"].update(queued.pop("aws_sdk"))
                seen["mcp"].add(f"{queued.pop('mcp')} mcp modules{mode}")
                for key, value in queued.items():
                    figures.setdefault(f"chat sqs (deployed{mode}): {key}", []).append(value)
            before = got[0]
            events = planner_events(queued_env, endpoint, expected=2 * len(MODES))
            planned = json.loads(child(PLANNED, queued_env, events))
            broadcasts.append(got[0] - before)
            for key, value in planned.items():
                figures.setdefault(f"planner sqs (deployed): {key}", []).append(value)
            spans.append(
                traced_round(figures, traced(queued_env, receiver), endpoint, event, receiver)
            )
    report(figures, seen, broadcasts)
    report_tracing(figures, counts, spans)


def traced_round(
    figures: dict[str, list[float]],
    env: dict[str, str],
    endpoint: str,
    event: str,
    receiver: OtlpReceiver,
) -> int:
    """The deployed chat's two sends and the planner's runs of them with tracing on; the spans
    the receiver got for them."""
    before = len(receiver.spans())
    queued = json.loads(child(QUEUED, env, event, uuid4().hex))
    for key in ("import", "first", "warm"):
        figures.setdefault(f"chat sqs (deployed{TRACED}): {key}", []).append(queued[key])
    planned = json.loads(child(PLANNED, env, planner_events(env, endpoint, expected=2)))
    for key, value in planned.items():
        figures.setdefault(f"planner sqs (deployed{TRACED}): {key}", []).append(value)
    return len(receiver.spans()) - before


def import_ratios(
    medians: dict[str, float], minimums: dict[str, float], *, deployed: str | None, cpu: str
) -> None:
    """The chat handler's import ÷ `import openai`, the floor's, and Parley's own share."""
    chat, openai, floor = (
        f"import functions.chat.handler{cpu}",
        f"import openai{cpu}",
        LIBRARIES_LINE + cpu,
    )
    lines: list[tuple[str, Callable[[dict[str, float]], float]]] = [
        ("chat handler import ÷ import openai", lambda f: f[chat] / f[openai]),
        ("  its libraries alone (floor) ÷ import openai", lambda f: f[floor] / f[openai]),
        (
            "  Parley's own share (handler − floor) ÷ openai",
            lambda f: (f[chat] - f[floor]) / f[openai],
        ),
    ]
    if deployed is not None:
        lines += [
            ("  as deployed (sqs, its send path at init)", lambda f: f[deployed] / f[openai]),
            ("  as deployed, own share ÷ openai", lambda f: (f[deployed] - f[floor]) / f[openai]),
        ]
    for label, ratio in lines:
        print(f"{label:<50} {ratio(medians):.2f}  (min {ratio(minimums):.2f})")


def on_floor_shares(medians: dict[str, float], minimums: dict[str, float]) -> None:
    """Parley's own share measured directly: the chat handler imported in the process that has
    just imported the libraries' floor (and registered its route), ÷ `import openai`. The
    shares above subtract two imports taken in separate processes, each with its own noise."""
    for cpu in ("", CPU):
        kind = "CPU" if cpu else "wall"
        for line, label in (
            (ON_FLOOR, f"Parley's own share, on the floor ({kind})"),
            (ON_FLOOR_VERSUS, f"  --versus checkout's, on the floor ({kind})"),
            (ON_FLOOR_MODELS_FILE, f"  with the tests' models file ({kind})"),
        ):
            if line + cpu in medians:
                share = [f[line + cpu] / f[f"import openai{cpu}"] for f in (medians, minimums)]
                print(f"{label:<50} {share[0]:.3f}  (min {share[1]:.3f})")


def report(
    figures: dict[str, list[float]], seen: dict[str, set[str]], broadcasts: list[int]
) -> None:
    print(f"Python {sys.version.split()[0]} (the Lambda functions run 3.12: infra/serverless.yml)")
    for name, values in figures.items():
        print(f"{name:<48} p50 {median_ms(values):8.1f} ms   (min {min(values) * 1000:.1f})")
    print("import ratios, wall time: of medians (and of minimums: the least disturbed runs)")
    medians = {name: median_ms(values) for name, values in figures.items()}
    minimums = {name: min_ms(values) for name, values in figures.items()}
    import_ratios(medians, minimums, deployed="chat sqs (deployed): import", cpu="")
    print("import ratios, CPU time: of medians (and of minimums)")
    import_ratios(medians, minimums, deployed=None, cpu=CPU)
    on_floor_shares(medians, minimums)
    if VERSUS in figures:
        for cpu in ("", CPU):
            share = [
                (f[VERSUS + cpu] - f[LIBRARIES_LINE + cpu]) / f[f"import openai{cpu}"]
                for f in (medians, minimums)
            ]
            label = f"  --versus checkout's own share ({'CPU' if cpu else 'wall'})"
            print(f"{label:<50} {share[0]:.2f}  (min {share[1]:.2f})")
    modes = [
        "chat in_process",
        *(f"chat sqs (deployed{m})" for m in MODES),
        "planner sqs (deployed)",
    ]
    for mode in modes:
        first, warm = median_ms(figures[f"{mode}: first"]), median_ms(figures[f"{mode}: warm"])
        print(f"{mode + ': first ÷ warm turn:':<62}{first / warm:.1f}")
    runs = 2 * len(MODES)
    print(
        f"planner sqs (deployed): Realtime messages received per round ({runs} runs): {broadcasts}"
    )
    loaded = ", ".join(sorted(seen["aws_sdk"])) or "neither"
    print(f"chat sqs (deployed): boto3 / botocore loaded:   {loaded}")
    print(f"chat sqs (deployed): MCP loaded:                {'; '.join(sorted(seen['mcp']))}")
    print(f"{BOTO3_LINE}: what the first 202 would add if the send path used boto3")
    if SECRETS:
        print(
            f"{SECRET_BOTO3_LINE}: what init would add reading the secret with boto3 (as "
            "pydantic-settings' AWSSecretsManagerSettingsSource does)"
        )


def report_tracing(
    figures: dict[str, list[float]], counts: dict[str, set[tuple[int, int]]], spans: list[int]
) -> None:
    """Tracing's cost: the chat handler's import with it off (the default) and on."""
    medians = {name: median_ms(values) for name, values in figures.items()}
    minimums = {name: min_ms(values) for name, values in figures.items()}
    off, on, openai = "import functions.chat.handler", TRACED_IMPORT, "import openai"
    print("tracing (OpenTelemetry): off is the default")
    for label, name in (("off", off), ("on", on)):
        print(
            f"  chat handler import, tracing {label} ÷ import openai:{' ' * (3 - len(label))}"
            f"{medians[name] / medians[openai]:.2f}  (min "
            f"{minimums[name] / minimums[openai]:.2f})"
        )
    print(
        f"  tracing on − off, chat handler import: {medians[on] - medians[off]:+.1f} ms  "
        f"(min {minimums[on] - minimums[off]:+.1f})"
    )
    for name in (off, on):
        loaded = "; ".join(f"{m} modules, {o} of OpenTelemetry" for m, o in sorted(counts[name]))
        print(f"  {name}: {loaded}")
    print(f"  spans received per round (chat's 2 sends, the planner's 2 runs): {spans}")


if __name__ == "__main__":
    main()
