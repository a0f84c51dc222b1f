"""Each function against its own OpenAPI document, with Schemathesis and all its checks
(`schemathesis run --checks all`): statuses, content types, headers and bodies as documented,
schema-valid requests accepted, schema-invalid ones refused, undeclared methods answered 405
with `Allow`, no 5xx, every phase (examples, coverage's boundary values, fuzzing, stateful
sequences). Bounded — 5 examples per operation, a fixed seed; ~20 s for the three — so it
stays fast; `SCHEMATHESIS_EXAMPLES` and `SCHEMATHESIS_SEED` make a longer hunt. Strings are
generated as UTF-8 (a lone surrogate is no well-formed JSON text, and is refused with 422)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from local.deepseek import FakeModelServer
from shared.db import Database
from shared.llm.tokens import DeepSeekTokenizer
from tests.functions.conftest import token
from tests.support.factories import make_user
from tests.support.stack import SERVICE_KEY, Stack

EXAMPLES = os.environ.get("SCHEMATHESIS_EXAMPLES", "5")
SEED = os.environ.get("SCHEMATHESIS_SEED", "21")
INTERNAL = r"/(plans/\{plan_id\}|steps/\{step_id\})/run$"
"""The routes that take the service-role key; every other one a user's token."""


@pytest.fixture(scope="module")
def stack(
    database_url: str, fake: FakeModelServer, models_file: Path, tokenizer: DeepSeekTokenizer
) -> Iterator[Stack]:
    fake.reset()  # unscripted: every model call gets the offline demo model's canned reply
    running = Stack(
        database_url=database_url, fake=fake, models_file=models_file, tokenizer=tokenizer
    ).start()
    yield running
    running.stop()


def schemathesis(url: str, bearer: str, *filters: str) -> subprocess.CompletedProcess[str]:
    """`schemathesis run --checks all` against one function, as `bearer`, bounded."""
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "run",
        f"{url}/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        EXAMPLES,
        "--seed",
        SEED,
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--generation-codec",
        "utf-8",
        "--no-color",
        "--header",
        f"Authorization: Bearer {bearer}",
        "--request-timeout",
        "20",
        *filters,
    ]
    with tempfile.TemporaryDirectory() as scratch:  # its crash cache: not in the checkout
        return subprocess.run(
            command, capture_output=True, text=True, timeout=600, check=False, cwd=scratch
        )


@pytest.mark.parametrize("function", ["chat", "agent_planner", "agent_executor"])
async def test_each_function_conforms_to_its_openapi(
    stack: Stack, db: Database, function: str
) -> None:
    url = stack.url(function)
    runs = [schemathesis(url, token(await make_user(db)), "--exclude-path-regex", INTERNAL)]
    if function != "chat":  # the planner's and the executor's internal routes
        runs.append(schemathesis(url, SERVICE_KEY, "--include-path-regex", INTERNAL))
    for run in runs:
        assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-2000:]
        assert " passed" in run.stdout and "failure" not in run.stdout.split("SUMMARY")[-1]
