"""The console's files, without a browser: vendored files match the lockfile, every module
import resolves, and the deployable config example holds no secret."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.testclient import TestClient

from local.console import ConsoleSettings, console_routes

WEB = Path(__file__).resolve().parents[2] / "web"
PUBLIC = WEB / "public"
IMPORT = re.compile(r"""^\s*import\b[^'"]*['"]([^'"]+)['"]""", re.MULTILINE)


def test_vendored_files_match_the_lockfile() -> None:
    checked = subprocess.run(
        [sys.executable, str(WEB / "build.py"), "--check"], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_every_import_resolves_to_a_served_file() -> None:
    page = (PUBLIC / "index.html").read_text()
    found = re.search(r'<script type="importmap">(.*?)</script>', page, re.DOTALL)
    assert found is not None
    mapped = json.loads(found.group(1))["imports"]
    for target in mapped.values():
        assert (PUBLIC / target).is_file(), target
    for src in re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^":]+)"', page):
        assert (PUBLIC / src).is_file(), src
    modules = list((PUBLIC / "src").rglob("*.js"))
    assert len(modules) > 5
    vendored = [PUBLIC / t for t in mapped.values() if t.endswith(("mjs", ".js"))]
    vendored += list((PUBLIC / "vendor" / "parley-client").rglob("*.js"))
    for module in [*modules, *vendored]:
        for name in IMPORT.findall(module.read_text()):
            if name.startswith("."):
                assert (module.parent / name).resolve().is_file(), f"{module}: {name}"
            else:
                assert name in mapped, f"{module}: {name} is not in the import map"


def test_the_config_example_names_only_public_values() -> None:
    example = json.loads((PUBLIC / "config.example.json").read_text())
    assert set(example) <= {"label", "supabaseUrl", "supabaseAnonKey", "functions", "auth"}
    assert set(example["functions"]) == {"chat", "planner"}
    assert "service" not in json.dumps(example).lower()


def test_the_guides_code_is_the_consoles_code() -> None:
    """Each code excerpt in the frontend tutorial names its file (the console's, or
    @parley/client's it runs on) and appears in it, line by line; a whole file is included from
    the file itself."""
    guide = (WEB.parent / "docs" / "tutorial" / "frontend.md").read_text()
    blocks = re.findall(
        r"```(?:js|ts)\n// ((?:web/public|clients/js)/\S+)\n(.*?)```", guide, re.DOTALL
    )
    included = re.findall(r'^--8<-- "(clients/js/examples/\S+)"$', guide, re.MULTILINE)
    assert len(blocks) >= 8
    assert included
    assert all((WEB.parent / path).is_file() for path in included)
    for path, code in blocks:
        source = [line.strip() for line in (WEB.parent / path).read_text().splitlines()]
        at = 0
        for line in filter(None, (line.strip() for line in code.splitlines())):
            assert line in source[at:], f"{path}: {line!r} is not in the source (in this order)"
            at = source.index(line, at) + 1


def test_the_local_console_may_not_be_framed_by_another_site() -> None:
    settings = ConsoleSettings("http://127.0.0.1:4000", "sb_publishable_x", "d@x", "pw", "hi")
    with TestClient(Starlette(routes=console_routes(settings))) as client:
        for path in ("/", "/src/main.js", "/console.css"):
            response = client.get(path)
            assert response.status_code == 200, path
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
            assert response.headers["x-frame-options"] == "DENY"
            assert response.headers["x-content-type-options"] == "nosniff"
