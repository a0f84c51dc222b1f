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

from tests.support import ROOT

PACKAGE = ROOT / "clients" / "js"
CACHE = ROOT / ".parley" / "node" / "parley-client"
COPIED = (
    "src",
    "test",
    "scripts",
    "examples",
    "contract",
    "tsconfig.json",
    "package.json",
    "README.md",
)
CONSUMER = PACKAGE / "test" / "consumer"
"""A fresh app that installs the package's `npm pack` tarball (its own lockfile)."""
CONSUMER_CACHE = ROOT / ".parley" / "node" / "parley-client-consumer"


def package_copy() -> Path:
    """The package, installed with its dev dependencies (skip without node and npm)."""
    installed(PACKAGE, CACHE)
    for name in COPIED:
        source, target = PACKAGE / name, CACHE / name
        if target.is_dir():
            shutil.rmtree(target)
        if source.is_dir():
            shutil.copytree(source, target)
        elif source.exists():
            shutil.copy(source, target)
    return CACHE


def consumer_copy() -> Path:
    """The fresh app of `test/consumer`, its dependencies installed from its lockfile (`npm ci`
    once per lockfile; the package itself is installed by the caller, from its tarball)."""
    installed(CONSUMER, CONSUMER_CACHE)
    for source in CONSUMER.iterdir():
        if source.is_file() and source.name not in ("package.json", "package-lock.json"):
            shutil.copy(source, CONSUMER_CACHE / source.name)
    return CONSUMER_CACHE


def installed(folder: Path, cache: Path) -> None:
    """`cache` holds `folder`'s package.json with its lockfile's dependencies installed (`npm ci`
    when the lockfile changed); skip without node and npm."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are needed for @parley/client's tests; install Node.js 20+")
    cache.mkdir(parents=True, exist_ok=True)
    lock = (folder / "package-lock.json").read_text()
    done = cache / "node_modules" / ".package-lock.json"
    if not done.exists() or (cache / "package-lock.json").read_text() != lock:
        shutil.copy(folder / "package.json", cache / "package.json")
        (cache / "package-lock.json").write_text(lock)
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=cache,
            check=True,
            capture_output=True,
            timeout=600,
        )
