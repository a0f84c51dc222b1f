#!/usr/bin/env python3
"""Vendor the console's JavaScript dependencies into `web/public/vendor/` (no bundler).

The console is plain ES modules; its dependencies are single browser files published in their
npm packages (the supabase-js UMD bundle, Preact, htm, uPlot), and Parley's own client,
`@parley/client` (`clients/js/src/`, plain ES modules too). This script installs exactly
`package-lock.json` (`npm ci`) and copies those files, with their licences, into
`public/vendor/`, copies the client's modules into `public/vendor/parley-client/`, then writes
`public/vendor/manifest.json`: each file's package, version and SHA-256, and the lockfile's
SHA-256. The vendored files are committed, so serving the console needs no Node; only changing
`package.json` does (copying the client needs none).

    python3 web/build.py             rebuild public/vendor/ (needs npm)
    python3 web/build.py --check     exit 1 if public/vendor/ does not match the lockfile and
                                     clients/js/src/
    python3 web/build.py --if-stale  re-copy the client if it changed; rebuild the rest only if
                                     it does not match and npm is installed (what
                                     `python3 dev.py run` does); otherwise just say so

Standard library only: `dev.py` runs it before the virtualenv matters.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

WEB = Path(__file__).resolve().parent
VENDOR = WEB / "public" / "vendor"
MANIFEST = VENDOR / "manifest.json"
LOCK = WEB / "package-lock.json"
CLIENT = WEB.parent / "clients" / "js"
CLIENT_DIR = "parley-client"
CLIENT_FILES = (
    "index.js",
    "client.js",
    "sse.js",
    "sequencer.js",
    "texts.js",
    "watch.js",
    "generated/routes.js",
    "generated/problems.js",
)
"""@parley/client's modules the browser loads (its `.d.ts` files are for editors only)."""

FILES = {  # vendored name: (package, path inside the package)
    "supabase.js": ("@supabase/supabase-js", "dist/umd/supabase.js"),
    "preact.mjs": ("preact", "dist/preact.mjs"),
    "preact-hooks.mjs": ("preact", "hooks/dist/hooks.mjs"),
    "htm.mjs": ("htm", "dist/htm.mjs"),
    "uplot.mjs": ("uplot", "dist/uPlot.esm.js"),
    "uplot.css": ("uplot", "dist/uPlot.min.css"),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def locked_versions() -> dict[str, str]:
    """Each vendored package's version, as `package-lock.json` pins it."""
    packages = json.loads(LOCK.read_text())["packages"]
    return {pkg: packages[f"node_modules/{pkg}"]["version"] for pkg, _ in FILES.values()}


def problems() -> list[str]:
    """Why `public/vendor/` does not match the lockfile and the client (empty: it does)."""
    return npm_problems() + client_problems()


def client_problems() -> list[str]:
    """Why `public/vendor/parley-client/` is not `clients/js/src/` (empty: it is)."""
    found = []
    for name in CLIENT_FILES:
        copy, source = VENDOR / CLIENT_DIR / name, CLIENT / "src" / name
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            found.append(f"{CLIENT_DIR}/{name} is not clients/js/src/{name}")
    extra = {
        p.relative_to(VENDOR / CLIENT_DIR).as_posix()
        for p in (VENDOR / CLIENT_DIR).rglob("*")
        if p.is_file()
    } - set(CLIENT_FILES)
    found += [f"{CLIENT_DIR}/{name} is not one of the client's modules" for name in sorted(extra)]
    return found


def npm_problems() -> list[str]:
    """Why the npm packages' files in `public/vendor/` do not match the lockfile."""
    if not MANIFEST.exists():
        return ["public/vendor/manifest.json is missing"]
    manifest = json.loads(MANIFEST.read_text())
    found = []
    if manifest.get("lock_sha256") != sha256(LOCK):
        found.append("package-lock.json changed since public/vendor/ was built")
    versions = locked_versions()
    for name, (package, _) in FILES.items():
        entry = manifest.get("files", {}).get(name)
        path = VENDOR / name
        if entry is None or not path.exists():
            found.append(f"{name} is missing")
        elif entry["version"] != versions[package]:
            found.append(
                f"{name} is {package} {entry['version']}, the lock says {versions[package]}"
            )
        elif entry["sha256"] != sha256(path):
            found.append(f"{name} was changed by hand")
    return found


def vendor_client(manifest: dict[str, Any] | None = None) -> None:
    """Copy @parley/client's modules and record them in the manifest (no npm needed): in
    `manifest` when given (what `build()` vendored), else in the one on disk."""
    target = VENDOR / CLIENT_DIR
    if target.exists():
        shutil.rmtree(target)
    version = json.loads((CLIENT / "package.json").read_text())["version"]
    if manifest is None:
        manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"files": {}}
    files = {k: v for k, v in manifest["files"].items() if not k.startswith(f"{CLIENT_DIR}/")}
    for name in CLIENT_FILES:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CLIENT / "src" / name, target / name)
        files[f"{CLIENT_DIR}/{name}"] = {
            "package": "@parley/client",
            "version": version,
            "source": f"clients/js/src/{name}",
            "sha256": sha256(target / name),
        }
    MANIFEST.write_text(json.dumps({**manifest, "files": files}, indent=2) + "\n")
    print(f"web/build.py: copied @parley/client into {target.relative_to(WEB.parent)}")


def build() -> None:
    """`npm ci`, then copy the files and their licences, the client, and write the manifest."""
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("web/build.py: npm is needed to rebuild public/vendor/ (install Node.js 20+)")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=WEB, check=True)
    modules = WEB / "node_modules"
    VENDOR.mkdir(parents=True, exist_ok=True)
    (VENDOR / "licenses").mkdir(exist_ok=True)
    versions = locked_versions()
    files = {}
    for name, (package, source) in FILES.items():
        shutil.copyfile(modules / package / source, VENDOR / name)
        files[name] = {
            "package": package,
            "version": versions[package],
            "source": source,
            "sha256": sha256(VENDOR / name),
        }
    for package in sorted({package for package, _ in FILES.values()}):
        licence = modules / package / "LICENSE"
        shutil.copyfile(licence, VENDOR / "licenses" / f"{package.replace('/', '__')}.txt")
    print(f"web/build.py: vendored {len(files)} files into {VENDOR.relative_to(WEB.parent)}")
    vendor_client({"lock_sha256": sha256(LOCK), "files": files})


def refresh_if_stale() -> None:
    """`--if-stale`: rebuild if the npm files are stale and npm is installed (that copies the
    client too); otherwise re-copy the client if it changed, and say what is stale."""
    npm = shutil.which("npm")
    stale = npm_problems() if npm is not None else []
    failed = None
    if stale:
        try:
            build()
            return
        except subprocess.CalledProcessError as exc:
            failed = exc.returncode
    if client_problems():
        vendor_client()
    if failed is not None:
        print(
            f"web/build.py: npm ci failed ({failed}); serving the committed files.", file=sys.stderr
        )
    elif npm is None and (stale := npm_problems()):
        print(
            f"web/build.py: {stale[0]}; serving the committed files. Install Node.js 20+ "
            "and run python3 web/build.py to rebuild.",
            file=sys.stderr,
        )


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        found = problems()
        for problem in found:
            print(f"web/build.py: {problem}", file=sys.stderr)
        return 1 if found else 0
    if argv == ["--if-stale"]:
        refresh_if_stale()
        return 0
    if argv:
        print(__doc__)
        return 2
    build()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
