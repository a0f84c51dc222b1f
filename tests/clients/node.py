"""`@parley/client` (clients/js) from the tests: a copy of the package with its dev dependencies.

`npm ci` runs once per lockfile into `.parley/node/parley-client`; the package's files are
copied there before every use (ESM resolves packages beside the importing file), so the
committed package is what runs. Without Node or npm the tests that need them skip and say so.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "js"
CACHE = ROOT / ".parley" / "node" / "parley-client"
COPIED = ("src", "test", "scripts", "examples", "contract", "tsconfig.json", "package.json")


def package_copy() -> Path:
    """The package, installed with its dev dependencies (skip without node and npm)."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are needed for @parley/client's tests; install Node.js 20+")
    CACHE.mkdir(parents=True, exist_ok=True)
    lock = (PACKAGE / "package-lock.json").read_text()
    installed = CACHE / "node_modules" / ".package-lock.json"
    if not installed.exists() or (CACHE / "package-lock.json").read_text() != lock:
        shutil.copy(PACKAGE / "package.json", CACHE / "package.json")
        (CACHE / "package-lock.json").write_text(lock)
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CACHE, check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    for name in COPIED:
        source, target = PACKAGE / name, CACHE / name
        if target.is_dir():
            shutil.rmtree(target)
        if source.is_dir():
            shutil.copytree(source, target)
        elif source.exists():
            shutil.copy(source, target)
    return CACHE
