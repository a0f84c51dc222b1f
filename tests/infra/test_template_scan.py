"""The deploy template, scanned: cfn-lint and checkov over what `osls package` makes.

Both tools run from `.venv-scan`, a venv of their own installed from `infra/scan.lock` with
hash checking (checkov pins boto3 and dozens of other packages; the project's own environment
is not held to them). It is made on first use and again whenever the lock changes — seconds
from uv's cache; the first time on a new machine, about a minute of downloads. Every finding
must be one of the exceptions `infra/README.md` lists with its reason, and every exception
listed must still be found (a fixed finding leaves the table).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infra.conftest import INFRA, ROOT, package, template_file

SCAN_VENV = ROOT / ".venv-scan"
STAMP = SCAN_VENV / ".parley-installed"
STAGES = ("ci", "prod")
"""`ci`: the defaults (SnapStart off); `prod`: SnapStart on every function, prod's sizes."""

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None, reason="npm is not installed: osls cannot be run here"
)


def documented_exceptions() -> set[str]:
    """The finding ids of the "Template scan" table of docs/reference/aws.md."""
    readme = (INFRA.parent / "docs" / "reference" / "aws.md").read_text()
    section = readme.split("## Template scan", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", section, flags=re.M))


@pytest.fixture(scope="module")
def scanners() -> Path:
    """`.venv-scan/bin`, with infra/scan.lock installed (hash-checked) when it changed."""
    lock = INFRA / "scan.lock"
    digest = hashlib.sha256(lock.read_bytes() + sys.version.encode()).hexdigest()
    if not STAMP.exists() or STAMP.read_text() != digest:
        uv = ROOT / ".venv" / "bin" / "uv"
        shutil.rmtree(SCAN_VENV, ignore_errors=True)
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, SCAN_VENV], check=True)
        subprocess.run(
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--python",
                SCAN_VENV / "bin" / "python",
                "--require-hashes",
                "-r",
                lock,
            ],
            check=True,
        )
        STAMP.write_text(digest)
    return SCAN_VENV / "bin"


@pytest.fixture(scope="module")
def templates(bundle: Path) -> Iterator[list[Path]]:
    for stage in STAGES:
        package(stage, into=f"scan-{stage}")
    yield [template_file(f"scan-{stage}") for stage in STAGES]


def test_cfn_lint_finds_only_the_documented_exceptions(
    scanners: Path, templates: list[Path]
) -> None:
    done = subprocess.run(
        [scanners / "cfn-lint", "--format", "json", *templates],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in range(0, 16, 2), done.stderr  # findings (a bitmask), not a crash
    findings = json.loads(done.stdout or "[]")
    errors = [f for f in findings if f["Level"] == "Error"]
    assert errors == []
    found = {f["Rule"]["Id"] for f in findings}
    documented = {rule for rule in documented_exceptions() if not rule.startswith("CKV_")}
    assert found == documented, _described(findings, "Rule", "Id")


def test_checkov_finds_only_the_documented_exceptions(
    scanners: Path, templates: list[Path]
) -> None:
    files = [option for path in templates for option in ("--file", str(path))]
    done = subprocess.run(
        [
            scanners / "checkov",
            *files,
            "--framework",
            "cloudformation",
            "--skip-download",
            "--quiet",
            "--compact",
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=INFRA,
    )
    assert done.stdout, done.stderr[-3000:]
    report = json.loads(done.stdout)
    failed = report["results"]["failed_checks"]
    assert report["summary"]["parsing_errors"] == 0
    assert report["summary"]["passed"] > 40  # the scan looked at the stack
    found = {check["check_id"] for check in failed}
    documented = {check for check in documented_exceptions() if check.startswith("CKV_")}
    assert found == documented, [(c["check_id"], c["resource"]) for c in failed]


def _described(findings: list[dict[str, object]], *path: str) -> list[str]:
    described = []
    for finding in findings:
        value: object = finding
        for key in path:
            value = value[key] if isinstance(value, dict) else None
        described.append(f"{value}: {finding.get('Message')}")
    return described
