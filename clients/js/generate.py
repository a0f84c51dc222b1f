#!/usr/bin/env python3
"""Regenerate `@parley/client`'s contract and types from the Python code that serves them.

1. `contract/`: each function's OpenAPI document, as its FastAPI app builds it
   (`app.openapi()`: `chat.json`, `agent_planner.json`, `agent_executor.json`), and the events'
   JSON Schema as the chat function serves it (`events.json`, from `shared.wire.event_schema`).
2. `src/generated/`: `scripts/generate.mjs` turns those into TypeScript declarations
   (`openapi-typescript`, `json-schema-to-typescript`) and the route table the client calls.

    .venv/bin/python clients/js/generate.py           rewrite both (npm ci first, if needed)
    .venv/bin/python clients/js/generate.py --check   exit 1 if either is stale

Everything generated is committed, so using the package needs no build step; the tests fail
when a document or a declaration no longer matches the code (tests/clients/).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parents[1]
CONTRACT = PACKAGE / "contract"


def documents() -> dict[str, dict[str, Any]]:
    """Each contract document by file name, built from the code."""
    sys.path.insert(0, str(ROOT))
    from functions.agent_executor.app import create_app as executor_app
    from functions.agent_planner.app import create_app as planner_app
    from functions.chat.app import create_app as chat_app
    from shared.wire.event_schema import events_json_schema

    return {
        "chat.json": chat_app().openapi(),
        "agent_planner.json": planner_app().openapi(),
        "agent_executor.json": executor_app().openapi(),
        "events.json": events_json_schema(),
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def stale_documents() -> list[str]:
    """The contract files that differ from what the code builds (empty: all current)."""
    return [
        name
        for name, document in documents().items()
        if not (CONTRACT / name).exists() or (CONTRACT / name).read_text() != render(document)
    ]


def write_documents() -> None:
    CONTRACT.mkdir(exist_ok=True)
    for name, document in documents().items():
        (CONTRACT / name).write_text(render(document))


def node_generate(*, check: bool) -> int:
    """Run `scripts/generate.mjs` on `contract/` (`npm ci` first when the package's dev
    dependencies are not installed)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        sys.exit("clients/js/generate.py: Node.js 20+ and npm are needed for the declarations")
    if not (PACKAGE / "node_modules" / "openapi-typescript").exists():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PACKAGE, check=True
        )
    script = PACKAGE / "scripts" / "generate.mjs"
    args = [node, str(script), "--root", str(PACKAGE), *(["--check"] if check else [])]
    return subprocess.run(args).returncode


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = stale_documents()
        for name in stale:
            print(f"clients/js/contract/{name} is stale", file=sys.stderr)
        return 1 if stale else node_generate(check=True)
    if argv:
        print(__doc__)
        return 2
    write_documents()
    return node_generate(check=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
