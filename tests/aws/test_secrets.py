"""Settings from the stage's Secrets Manager secret (`SETTINGS_SECRET_ID`), read at init by
Parley's own signed client, against moto's Secrets Manager (a server on the loopback)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from shared.aws.secrets import read_secret, secret_settings
from shared.db import Database
from shared.kernel.errors import ConfigurationError
from shared.services import load_settings
from tests.functions.conftest import SECRET
from tests.functions.test_handlers import load_event
from tests.support.factories import make_user

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def secrets(aws: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's Secrets Manager (boto3's client, to set secrets up); Parley's reader pointed at
    it as boto3 would be (`AWS_ENDPOINT_URL_SECRETS_MANAGER`); each test reads afresh."""
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", aws)
    secret_settings.cache_clear()
    yield boto3.client("secretsmanager", endpoint_url=aws)
    secret_settings.cache_clear()


def stage_secret(client: Any, values: dict[str, Any]) -> str:
    name = f"parley/test-{uuid4().hex[:8]}"
    client.create_secret(Name=name, SecretString=json.dumps(values))
    return name


def test_settings_come_from_the_secret_the_environment_names(
    secrets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = [{"name": "files", "command": "npx", "args": ["-y", "fs"]}]
    name = stage_secret(
        secrets,
        {
            "DATABASE_URL": "postgresql://parley:pw@db.example.com:6543/postgres",
            "SUPABASE_SERVICE_ROLE_KEY": "service-role-key",
            "DEEPSEEK_API_KEY": "sk-deepseek",
            "MCP_SERVERS": servers,
            "DB_POOL_MAX_SIZE": 1,
        },
    )
    monkeypatch.setenv("SETTINGS_SECRET_ID", name)

    settings = load_settings()

    assert settings.database_url == "postgresql://parley:pw@db.example.com:6543/postgres"
    assert settings.supabase_service_role_key is not None
    assert settings.supabase_service_role_key.get_secret_value() == "service-role-key"
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-deepseek"  # an alias, as in the env
    assert [server.name for server in settings.mcp_servers] == ["files"]  # JSON, as in the env
    assert settings.db_pool_max_size == 1
    assert "service-role-key" not in repr(settings)


def test_the_environment_wins_and_the_secret_is_read_once(
    secrets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = stage_secret(secrets, {"LOG_LEVEL": "DEBUG", "LLM_API_KEY": "from-the-secret"})
    monkeypatch.setenv("SETTINGS_SECRET_ID", name)
    monkeypatch.setenv("LOG_LEVEL", "ERROR")

    first, second = load_settings(), load_settings()

    assert (first.log_level, second.log_level) == ("ERROR", "ERROR")
    assert first.llm_api_key is not None
    assert first.llm_api_key.get_secret_value() == "from-the-secret"
    assert secret_settings.cache_info().misses == 1  # one GetSecretValue per process


def test_no_secret_id_reads_nothing(secrets: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SETTINGS_SECRET_ID", raising=False)
    load_settings()
    assert secret_settings.cache_info().misses == 0


@pytest.mark.parametrize(
    ("stored", "expected"),
    [(None, "ResourceNotFoundException"), ("not json", "JSON object"), ('["a"]', "JSON object")],
)
def test_a_secret_that_cannot_be_used_is_a_configuration_error(
    secrets: Any, monkeypatch: pytest.MonkeyPatch, stored: str | None, expected: str
) -> None:
    name = f"parley/missing-{uuid4().hex[:8]}"
    if stored is not None:
        secrets.create_secret(Name=name, SecretString=stored)
    monkeypatch.setenv("SETTINGS_SECRET_ID", name)

    with pytest.raises(ConfigurationError, match=expected) as refused:
        load_settings()
    assert name in str(refused.value)
    assert stored is None or stored not in str(refused.value)


def test_secrets_manager_unreachable_is_tried_three_times(secrets: Any) -> None:
    waits: list[float] = []
    unreachable = {**os.environ, "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://127.0.0.1:9"}
    with pytest.raises(ConfigurationError, match="could not be reached"):
        read_secret("parley/x", unreachable, sleep=waits.append)
    assert len(waits) == 2


CHAT_PROCESS = """
import json, sys
from functions.chat.handler import handler
response = handler(json.loads(sys.argv[1]), None)
print(json.dumps({"status": response["statusCode"], "body": response["body"],
                  "aws_sdk": sorted(m for m in sys.modules if m.split(".")[0] in
                                    ("boto3", "botocore"))}))
"""


async def test_a_deployed_function_runs_on_the_secret_alone(
    secrets: Any, database_url: str, db: Database
) -> None:
    """The chat function as infra/serverless.yml configures it: no database URL, no JWT secret
    in its environment — only the secret's name. Its first request is served (the user's
    sessions, read from the database as the user), and boto3 was never loaded."""
    user = await make_user(db)
    name = stage_secret(secrets, {"DATABASE_URL": database_url, "SUPABASE_JWT_SECRET": SECRET})
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SUPABASE_JWT_SECRET")}
    env["SETTINGS_SECRET_ID"] = name
    event = json.dumps(load_event("chat_list_sessions.json", user))

    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CHAT_PROCESS, event],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["status"] == 200, found["body"]
    assert found["aws_sdk"] == []
