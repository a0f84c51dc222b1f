"""Deployment tests: the Lambda bundle, built once per session by `infra/build.py` as a user
runs it (uv for Linux wheels, checked against the lock's hashes), and the template `osls` makes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
BUNDLE = ROOT / "dist" / "parley.zip"


def build_script() -> ModuleType:
    """`infra/build.py` as a module (a script, not a package)."""
    spec = importlib.util.spec_from_file_location("infra_build", ROOT / "infra" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bundle() -> Path:
    """`dist/parley.zip` as `python3 infra/build.py` builds it (arm64, no extra)."""
    subprocess.run([sys.executable, "infra/build.py"], cwd=ROOT, check=True)
    return BUNDLE


def package(stage: str, *, into: str | None = None, **params: str) -> dict[str, Any]:
    """`osls package --stage <stage> [--param k=v]…` offline, with no AWS credentials; the
    generated update-stack template (in `infra/.serverless-<into or stage>/`)."""
    if not (INFRA / "node_modules" / ".bin" / "osls").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=INFRA, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["SLS_TELEMETRY_DISABLED"] = "1"
    given = [f"--param={name}={value}" for name, value in params.items()]
    subprocess.run(
        [
            "npx",
            "osls",
            "package",
            "--stage",
            stage,
            "--package",
            f".serverless-{into or stage}",
            *given,
        ],
        cwd=INFRA,
        check=True,
        env=env,
        capture_output=True,
    )
    loaded: dict[str, Any] = json.loads(template_file(into or stage).read_text())
    return loaded


def template_file(name: str) -> Path:
    """The update-stack template `package(..., into=name)` wrote."""
    return INFRA / f".serverless-{name}" / "cloudformation-template-update-stack.json"
