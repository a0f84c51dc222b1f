"""`dev.py check-model`: Parley's requests against a model endpoint, a verdict per kind.

CI has no key: it runs against DeepSeek's twin, which holds them to DeepSeek's contract. The
failures it reports name the rule and the setting that fixes it."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from pydantic import SecretStr

from local.check_model import Checker, check_all, table
from local.deepseek import FakeModelServer
from shared.kernel.settings import Settings
from shared.llm import OpenAIClient, RetryPolicy, load_registry
from tests.support import ROOT

NOT_THINKING = """
[[model]]
match = "deepseek-v4-pro"
thinking = false
thinking_toggle = false
"""


def test_check_model_passes_against_the_twin_without_a_key() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DEEPSEEK_", "LLM_", "PLANNER_", "EXECUTOR_"))
    }

    done = subprocess.run(
        [sys.executable, "-m", "local.check_model"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "against DeepSeek's local twin (no key set)" in done.stdout
    assert "11/11 passed" in done.stdout
    kinds = (
        "routing, streamed (planner)",
        "executor step, thinking auto",
        "planner step, thinking disabled",
        "a later message",
        "final answer, streamed (no tools)",
        "answer to an executor's question",
    )
    assert all(f"PASS  {kind}" in done.stdout for kind in kinds)


async def check(fake: FakeModelServer, settings: Settings, key: str) -> str:
    registry = load_registry(settings.llm_models_file)
    client = OpenAIClient(
        base_url=fake.base_url, api_key=key, registry=registry, retry=RetryPolicy(max_retries=0)
    )
    checker = Checker(client, settings, Decimal("0.10"))
    async with client:
        await check_all(checker)
    return table(checker.verdicts, fake.base_url, checker.spent)


async def test_a_wrong_key_fails_every_request_naming_the_setting(tmp_path: Path) -> None:
    with FakeModelServer(api_key="sk-right") as fake:
        printed = await check(fake, Settings(llm_base_url=fake.base_url), "sk-wrong")

    assert "0/10 passed" in printed  # (the next turn needs a first one: not sent)
    assert "rule: 401 (docs/deepseek.md); fix: DEEPSEEK_API_KEY (or LLM_API_KEY)" in printed


async def test_a_registry_that_denies_thinking_shows_the_rule_it_breaks(tmp_path: Path) -> None:
    """A models file that says the planner's model does not think (so Parley forces its steps'
    calls with `required`), against a model that does: DeepSeek's 400, and the way out."""
    models = tmp_path / "models.toml"
    models.write_text(NOT_THINKING)
    with FakeModelServer() as fake:
        settings = Settings(
            llm_base_url=fake.base_url, llm_models_file=models, llm_api_key=SecretStr("sk-x")
        )
        printed = await check(fake, settings, "sk-x")

    assert "FAIL  planner step, thinking auto" in printed
    assert (
        "rule: tool-choice-thinking (docs/deepseek.md); fix: LLM_PLANNER_THINKING=disabled"
        in printed
    )
    assert "PASS  executor step, thinking auto" in printed
