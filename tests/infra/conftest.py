"""Deployment tests: the Lambda bundle, built once per session by `infra/build.py` as a user
runs it (uv for Linux wheels, checked against the lock's hashes), and the template `osls` makes.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
