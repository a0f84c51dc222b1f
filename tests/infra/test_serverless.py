"""Deployment: the Lambda bundle builds offline and `osls package` turns it into the stack.

Runs the real tools (uv for Linux arm64 wheels, osls from npm) with no AWS credentials; npm's
install is cached in `infra/node_modules` and uv's in its cache, so later runs take seconds.
The generated CloudFormation is checked for what the flow through the queues relies on.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from local.cors import ALLOWED_HEADERS, EXPOSED_HEADERS, MAX_AGE_SECONDS, origins
from shared.kernel.settings import Settings
from shared.services import load_settings
from tests.infra.conftest import package

FUNCTIONS = {
    "ChatLambdaFunction": "chat",
    "AgentUnderscoreplannerLambdaFunction": "agent_planner",
    "AgentUnderscoreexecutorLambdaFunction": "agent_executor",
}

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None, reason="npm is not installed: osls cannot be run here"
)


@pytest.fixture(scope="module")
def template(bundle: Path) -> dict[str, Any]:
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


SECRET_SETTINGS = (
    "DATABASE_URL",
    "SUPABASE_URL",
    "SUPABASE_SERVICE_ROLE_KEY",
    "SUPABASE_JWT_SECRET",
    "SUPABASE_ANON_KEY",
    "LLM_API_KEY",
    "MCP_SERVERS",
)
"""Settings the stage's secret holds: never in a function's configuration."""


def test_environment_names_are_settings_and_hold_no_secret(template: dict[str, Any]) -> None:
    """The functions' configuration (readable with `lambda:GetFunctionConfiguration`) names
    the stage's secret and holds none of it — no value, no dynamic reference resolved into
    it at deploy time; the whole template holds no `{{resolve:...}}` either."""
    settings = {name.upper() for name in Settings.model_fields}
    for logical_id in FUNCTIONS:
        variables = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert set(variables) <= settings, set(variables) - settings
        assert variables["SETTINGS_SECRET_ID"] == "parley/ci"
        assert not set(variables) & set(SECRET_SETTINGS)
        assert "secretsmanager" not in json.dumps(variables)
    assert "{{resolve:" not in json.dumps(template)


def test_each_function_may_read_only_its_stages_secret(template: dict[str, Any]) -> None:
    for function in FUNCTIONS:
        reads = [
            s
            for s in statements(template, function)
            if "secretsmanager:GetSecretValue" in str(s["Action"])
        ]
        assert len(reads) == 1 and reads[0]["Action"] == "secretsmanager:GetSecretValue"
        assert reads[0]["Resource"]["Fn::Sub"].endswith(":secret:parley/ci-??????")


def test_a_project_verified_through_jwks_needs_no_jwt_secret(template: dict[str, Any]) -> None:
    """The stage's secret decides how tokens are verified: with SUPABASE_JWT_SECRET (the legacy
    HS256 secret) or without it — a project on asymmetric signing keys leaves it out, and the
    functions verify tokens with the project's published keys. Nothing in the template names
    it, so no deployment needs one (an empty value counts as unset too)."""
    assert "SUPABASE_JWT_SECRET" not in json.dumps(template)
    settings = load_settings(supabase_jwt_secret="", supabase_url="https://abcd.supabase.co")
    assert settings.supabase_jwt_secret is None
    assert settings.jwks_url == "https://abcd.supabase.co/auth/v1/.well-known/jwks.json"


def default(setting: str) -> Any:
    return Settings.model_fields[setting].default


QUEUES = {"PlannerQueue": "PlannerDeadLetterQueue", "ExecutorQueue": "ExecutorDeadLetterQueue"}
CONSUMERS = {
    "PlannerQueue": "AgentUnderscoreplannerLambdaFunction",
    "ExecutorQueue": "AgentUnderscoreexecutorLambdaFunction",
}


def of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_each_queue_dead_letters_after_repeated_failures(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    assert set(of_type(template, "AWS::SQS::Queue")) == set(QUEUES) | set(QUEUES.values())
    for queue, dead in QUEUES.items():
        properties = resources[queue]["Properties"]
        assert properties["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [dead, "Arn"]},
            "maxReceiveCount": 5,
        }
        assert "FifoQueue" not in properties  # standard queues: leases order the work
        timeout = resources[CONSUMERS[queue]]["Properties"]["Timeout"]
        assert properties["VisibilityTimeout"] >= 6 * timeout
        assert resources[dead]["Properties"]["MessageRetentionPeriod"] == 1209600


def test_each_function_consumes_its_queue_one_message_at_a_time(template: dict[str, Any]) -> None:
    mappings = of_type(template, "AWS::Lambda::EventSourceMapping").values()
    consumed = {
        m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]: m["Properties"]["FunctionName"][
            "Fn::GetAtt"
        ][0]
        for m in mappings
    }
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
            "GreaterThanOrEqualToThreshold",
            1,
        )
        assert properties["AlarmActions"] == [{"Ref": "AlarmTopic"}]
        metrics = {m["Id"]: m for m in properties["Metrics"]}
        assert metrics["depth"]["Expression"] == "visible + hidden"
        names = {metrics[i]["MetricStat"]["Metric"]["MetricName"] for i in ("visible", "hidden")}
        assert names == {
            "ApproximateNumberOfMessagesVisible",
            "ApproximateNumberOfMessagesNotVisible",
        }
        queues = {
            metrics[i]["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
            for i in ("visible", "hidden")
        }
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
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
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
        "PlannerQueue",
        "PlannerDeadLetterQueue",
        "ExecutorDeadLetterQueue",
    }
    assert queues_for(template, executor, "sqs:ReceiveMessage") == {"ExecutorQueue"}
    assert queues_for(template, planner, "sqs:DeleteMessage") == {"PlannerQueue"}
    assert queues_for(template, executor, "sqs:DeleteMessage") == {"ExecutorQueue"}


def test_timeouts_fit_what_each_function_now_does(template: dict[str, Any]) -> None:
    timeouts = {
        name: template["Resources"][f]["Properties"]["Timeout"] for f, name in FUNCTIONS.items()
    }
    assert timeouts["chat"] <= 30  # stores the message, queues the plan, answers 202
    assert timeouts["agent_executor"] > default("executor_timeout_seconds")  # the step ends first
    assert timeouts["agent_executor"] < timeouts["agent_planner"] < 900


def test_reserved_concurrency_and_cors_come_from_the_stage(template: dict[str, Any]) -> None:
    origin = "https://console.example.com"
    prod = package("prod", into="prod-origin", consoleOrigin=origin)
    for logical_id in ("ChatLambdaFunctionUrl", "AgentUnderscoreplannerLambdaFunctionUrl"):
        assert prod["Resources"][logical_id]["Properties"]["Cors"]["AllowOrigins"] == [origin]
    for stage, expected in ((template, (10, 10, 25)), (prod, (100, 150, 2000))):
        found = tuple(
            stage["Resources"][f]["Properties"]["ReservedConcurrentExecutions"] for f in FUNCTIONS
        )
        assert found == expected  # the chat's too: a flood of sends cannot take the account's
    # DeepSeek allows 500 concurrent planner-model (Pro) and 2,500 executor-model (Flash)
    # requests: up to 3 planner-model calls per planner invocation, one per executor.
    assert 150 * default("executor_concurrency") <= 500 and 2000 <= 2500


def snapstart_targets(template: dict[str, Any]) -> dict[str, set[str]]:
    """Per function, what calls it through the `snapstart` alias: url, queue, schedule."""
    found: dict[str, set[str]] = {name: set() for name in FUNCTIONS.values()}
    callers = {
        "AWS::Lambda::Url": ("TargetFunctionArn", "url"),
        "AWS::Lambda::EventSourceMapping": ("FunctionName", "queue"),
    }
    for resource in template["Resources"].values():
        targets: list[tuple[Any, str]] = []
        if resource["Type"] in callers:
            key, kind = callers[resource["Type"]]
            targets = [(resource["Properties"][key], kind)]
        elif resource["Type"] == "AWS::Events::Rule":
            targets = [(t["Arn"], "schedule") for t in resource["Properties"]["Targets"]]
        for target, kind in targets:
            joined = target.get("Fn::Join", [None, []])[1]
            if joined and joined[-1] == "snapstart":
                found[FUNCTIONS[joined[0]["Fn::GetAtt"][0]]].add(kind)
    return found


def test_snapstart_is_turned_on_per_function_behind_an_alias(template: dict[str, Any]) -> None:
    """Off by default; on, a function's published versions are snapshotted and everything
    that calls it — its URL, its queue, the sweeper's schedule — calls the alias."""
    assert not any("SnapStart" in template["Resources"][f]["Properties"] for f in FUNCTIONS)
    assert snapstart_targets(template) == {name: set() for name in FUNCTIONS.values()}

    chat_only = package("ci", into="ci-snapstart", chatSnapStart="true")
    assert chat_only["Resources"]["ChatLambdaFunction"]["Properties"]["SnapStart"] == {
        "ApplyOn": "PublishedVersions"
    }
    assert snapstart_targets(chat_only) == {
        "chat": {"url"},
        "agent_planner": set(),
        "agent_executor": set(),
    }

    prod = package("prod", into="prod-snapstart")
    assert snapstart_targets(prod) == {
        "chat": {"url"},
        "agent_planner": {"url", "queue", "schedule"},
        "agent_executor": {"queue"},
    }
    for function in FUNCTIONS:
        assert prod["Resources"][function]["Properties"]["Runtime"] == "python3.12"  # 3.12+


def test_what_the_stack_stores_is_private_and_encrypted(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    bucket = resources["ServerlessDeploymentBucket"]["Properties"]
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    for queue in of_type(template, "AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    (topic,) = of_type(template, "AWS::SNS::Topic").values()
    assert topic["Properties"]["KmsMasterKeyId"] == {"Ref": "AlarmTopicKey"}
    key = resources["AlarmTopicKey"]["Properties"]
    assert key["EnableKeyRotation"] is True
    grants = {s["Sid"]: s for s in key["KeyPolicy"]["Statement"]}
    # CloudWatch must be able to publish the alarms to the encrypted topic, and only that.
    assert grants["CloudWatchAlarmsPublish"]["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert sorted(grants["CloudWatchAlarmsPublish"]["Action"]) == [
        "kms:Decrypt",
        "kms:GenerateDataKey*",
    ]


def test_logs_are_json_lines_at_the_stages_level_and_traces_go_where_named(
    template: dict[str, Any],
) -> None:
    """Every function writes Lambda's JSON log format (a record's extra fields — the work's
    ids — kept as top-level keys: shared/observability/logs.py), filtered at LOG_LEVEL's level;
    traces are exported only where the stage names a collector (`otlpEndpoint`)."""
    prod = package("prod", into="prod-traced", otlpEndpoint="http://localhost:4318")
    for stage, level, lambda_level, endpoint in (
        (template, "INFO", "INFO", ""),
        (prod, "WARNING", "WARN", "http://localhost:4318"),
    ):
        for logical_id in FUNCTIONS:
            properties = stage["Resources"][logical_id]["Properties"]
            assert properties["LoggingConfig"] == {
                "LogFormat": "JSON",
                "ApplicationLogLevel": lambda_level,
            }
            variables = properties["Environment"]["Variables"]
            assert variables["LOG_LEVEL"] == level
            assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
    assert Settings(otel_exporter_otlp_endpoint="").otel_exporter_otlp_endpoint is None
