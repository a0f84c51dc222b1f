"""`@parley/client` (clients/js): its generated files match the code, its declarations and
examples type-check, and its own tests (`node --test`) pass — the unit tests alone, the others
against the local stack (Realtime, the three functions, the offline demo model)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
from pathlib import Path
from types import ModuleType

import pytest

from local.auth.keys import mint_token
from local.seed import DEMO_EMAIL, DEMO_PASSWORD, DEMO_USER_ID
from local.stack import CONSOLE_DEMO_MESSAGE, RunningStack
from shared.db import Database
from shared.usecases.daily_dashboards import OPERATOR, OPERATOR_CLAIM
from tests.support import ROOT
from tests.support.client_node import PACKAGE, consumer_copy, package_copy
from tests.support.factories import make_user

UNIT = sorted(path.name for path in (PACKAGE / "test").glob("*.test.js"))
STACK = sorted(path.name for path in (PACKAGE / "test" / "stack").glob("*.test.js"))
TIMEOUT = 240.0
NODE_TEST_TIMEOUT = 60_000
"""Milliseconds a node test may take before node reports it (a hang is a failure, with output)."""
FORCE_EXIT = "--test-force-exit"
"""Exit once a file's tests are done: realtime-js leaves a 10 s timer behind each
`disconnect()`, which kept node up that long after every file that used the stack."""


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("clients_js_generate", PACKAGE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def package() -> Path:
    return package_copy()


async def node(package: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run node (or a tool of the package) in the package's copy; fail with its output."""
    process = await asyncio.create_subprocess_exec(
        *args,
        cwd=package,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), TIMEOUT)
    text = output.decode()
    assert process.returncode == 0, f"{' '.join(args)} exited {process.returncode}:\n{text}"
    return text


def test_the_contract_documents_are_the_functions() -> None:
    """clients/js/contract/ holds what the code serves: each function's OpenAPI document and
    the events' JSON Schema (regenerate: .venv/bin/python clients/js/generate.py)."""
    assert generator().stale_documents() == []


async def test_the_generated_declarations_are_current(package: Path) -> None:
    await node(package, "node", "scripts/generate.mjs", "--root", str(PACKAGE), "--check")


async def test_the_declarations_and_the_typescript_examples_type_check(package: Path) -> None:
    await node(package, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")


@pytest.mark.parametrize("name", UNIT)
async def test_unit(name: str, package: Path) -> None:
    await node(package, "node", "--test", f"--test-timeout={NODE_TEST_TIMEOUT}", f"test/{name}")


async def stack_settings(stack: RunningStack, db: Database) -> dict[str, object]:
    """What the node tests get as PARLEY_STACK: the stack's URLs and keys, and its users with
    their tokens — the demo user (whose calendar the demo turn's approval deletes from: it is
    restored first), another user, and an operator."""
    async with db.service() as conn:
        await conn.execute(
            "UPDATE calendar_events SET deleted_at = NULL WHERE user_id = %s", (DEMO_USER_ID,)
        )
    other = await make_user(db)
    users = {
        "demo": {"id": str(DEMO_USER_ID), "token": mint_token(stack.jwt_secret, sub=DEMO_USER_ID)},
        "other": {"id": str(other), "token": mint_token(stack.jwt_secret, sub=other)},
        "operator": {
            "id": str(DEMO_USER_ID),
            "token": mint_token(
                stack.jwt_secret,
                sub=DEMO_USER_ID,
                extra={"app_metadata": {OPERATOR_CLAIM: OPERATOR}},
            ),
        },
    }
    settings = {
        "chat": f"{stack.url}/chat",
        "planner": f"{stack.url}/agent_planner",
        "executor": f"{stack.url}/agent_executor",
        "supabaseUrl": stack.supabase_url,
        "anonKey": stack.anon_key,
        "users": users,
        "demoMessage": CONSOLE_DEMO_MESSAGE,
        "demoEmail": DEMO_EMAIL,
        "demoPassword": DEMO_PASSWORD,
        "jwtSecret": stack.jwt_secret,
        "maxChannels": 4,
    }
    return settings


@pytest.mark.parametrize("name", STACK)
async def test_against_the_local_stack(
    name: str, package: Path, stack: RunningStack, db: Database
) -> None:
    """The package against the stack, as the demo user, another user, and new users."""
    settings = await stack_settings(stack, db)
    await node(
        package,
        "node",
        "--test",
        f"--test-timeout={NODE_TEST_TIMEOUT}",
        FORCE_EXIT,
        f"test/stack/{name}",
        env={"PARLEY_STACK": json.dumps(settings)},
    )


async def test_the_packed_package_installs_type_checks_and_runs_the_hook(
    package: Path, stack: RunningStack, db: Database, tmp_path: Path
) -> None:
    """`npm pack` makes the tarball a registry would get: its files are the modules and their
    declarations, the README and package.json. A fresh app (`test/consumer`, its own lockfile:
    supabase-js, React) installs it, type-checks an app against both entry points' `exports`
    and declarations, and runs the React hook against the stack: a new user's demo turn to its
    approval and answer."""
    packed = json.loads(
        await node(
            package,
            "npm",
            "pack",
            "--json",
            "--loglevel=error",
            "--pack-destination",
            str(tmp_path),
        )
    )
    files = {entry["path"] for entry in packed[0]["files"]}
    sources = {
        p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "src").rglob("*") if p.is_file()
    }
    assert files == sources | {"README.md", "package.json"}
    assert {"src/react.js", "src/react.d.ts", "src/generated/problems.js"} <= files
    app = consumer_copy()
    tarball = tmp_path / packed[0]["filename"]
    await node(
        app,
        "npm",
        "install",
        "--no-save",
        "--offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        str(tarball),
    )
    manifest = json.loads((app / "node_modules/@parley/client/package.json").read_text())
    assert manifest["exports"]["./react"]["types"] == "./src/react.d.ts"
    await node(app, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
    settings = await stack_settings(stack, db)
    await node(
        app,
        "node",
        "--test",
        f"--test-timeout={NODE_TEST_TIMEOUT}",
        FORCE_EXIT,
        "hook.test.mjs",
        env={"PARLEY_STACK": json.dumps(settings)},
    )


@pytest.mark.parametrize("doc", ["clients/js/README.md"])
def test_the_typescript_example_in_the_docs_is_the_one_type_checked(doc: str) -> None:
    """The package README's send-watch-approve example (a TypeScript block starting with its
    imports; npm shows the README as it is) is the one the tests type-check, line by line. The
    docs site includes the file itself (docs/tutorial/frontend.md)."""
    example = [
        line.strip()
        for line in (PACKAGE / "examples/send_watch_approve.ts").read_text().splitlines()
    ]
    found = re.findall(
        r"```ts\n(?://[^\n]*\n)*(import .*?)```", (ROOT / doc).read_text(), re.DOTALL
    )
    blocks = [block for block in found if "watchSession" in block]
    assert blocks, f"{doc} shows no TypeScript example"
    for block in blocks:
        at = 0
        for line in filter(None, (line.strip() for line in block.splitlines())):
            if line.startswith("// clients/js/examples/"):
                continue
            assert line in example[at:], f"{doc}: {line!r} is not in the example (in this order)"
            at = example.index(line, at) + 1
