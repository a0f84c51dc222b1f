#!/usr/bin/env python3
"""Build `dist/parley.zip`, the one artifact all three Lambda functions run.

    python3 infra/build.py [--arch arm64|x86_64] [--python 3.12]

It resolves the run-time dependencies (`[project] dependencies`, pinned by requirements.lock,
less `NOT_DEPLOYED`), installs Linux wheels for the target into a staging folder (no Docker:
`--python-platform`), copies `shared/` and `functions/`, and byte-compiles everything with
unchecked-hash invalidation — the zip's 1980 timestamps would make timestamp-checked `.pyc`
files stale, and compiling at every cold start roughly doubles import time. Needs
`python3 dev.py` to have set up `.venv` (it uses its uv).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "lambda"
DIST = ROOT / "dist"
CODE = ("shared", "functions")
PLATFORMS = {
    "arm64": "aarch64-manylinux_2_28",
    "x86_64": "x86_64-manylinux_2_28",
}  # AL2023: glibc 2.34
SKIP = ("__pycache__", "*.pyc")
NOT_DEPLOYED = ("huggingface-hub", "hf-xet", "fsspec", "filelock", "tqdm")
"""The Hugging Face Hub client and what only it needs: pulled in by `tokenizers` for
`Tokenizer.from_pretrained` (downloads from the Hub), which Parley never calls: it loads
DeepSeek's bundled tokenizer.json from disk. Left out of the compiled requirements
(`--no-emit-package`; installed with `--no-deps`): about 17 MB unpacked, 5 MiB of the zip
(7 MiB with bytecode)."""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(PLATFORMS), default="arm64")
    parser.add_argument("--python", default="3.12", help="the Lambda runtime's Python version")
    parser.add_argument("--python-bin", help="that Python, to byte-compile (default: on PATH)")
    args = parser.parse_args(argv)
    uv = ROOT / ".venv" / "bin" / "uv"
    if not uv.exists():
        sys.exit("infra/build.py: run `python3 dev.py test` (or run) once to set up .venv")

    shutil.rmtree(BUILD, ignore_errors=True)
    BUILD.mkdir(parents=True)
    target = ["--python-platform", PLATFORMS[args.arch], "--python-version", args.python]
    requirements = BUILD.parent / "requirements.txt"
    skipped = [option for name in NOT_DEPLOYED for option in ("--no-emit-package", name)]
    run(uv, "pip", "compile", "pyproject.toml", "--constraint", "requirements.lock", *skipped,
        "--quiet", "--no-header", "--output-file", str(requirements), *target)  # fmt: skip
    run(uv, "pip", "install", "--quiet", "--target", str(BUILD), "--only-binary", ":all:",
        "--no-deps", "-r", str(requirements), *target)  # fmt: skip
    for package in CODE:
        shutil.copytree(ROOT / package, BUILD / package, ignore=shutil.ignore_patterns(*SKIP))
    compile_bytecode(args.python, args.python_bin)
    artifact = zip_dir(BUILD, DIST / "parley.zip")
    print(f"{artifact.relative_to(ROOT)}: {artifact.stat().st_size / 2**20:.1f} MiB")
    return 0


def compile_bytecode(version: str, python: str | None) -> None:
    """Byte-compile with the target's own Python (a .pyc is only valid for its minor version)."""
    python = python or shutil.which(f"python{version}")
    works = python and subprocess.run([python, "-c", ""], capture_output=True).returncode == 0
    if not python or not works:
        print(
            f"warning: python{version} not found; the bundle ships without bytecode "
            "(each cold start will compile, roughly doubling import time)",
            file=sys.stderr,
        )
        return
    run(python, "-m", "compileall", "-q", "-j0", "--invalidation-mode", "unchecked-hash", BUILD)


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


def run(*cmd: object) -> None:
    # uv would try to download a CPython for --python-version; the wheels are all it needs.
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run([str(part) for part in cmd], cwd=ROOT, check=True, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
