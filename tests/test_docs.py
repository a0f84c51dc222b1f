"""Docs match code: the README's configuration table lists exactly the settings that exist."""

from __future__ import annotations

import re
from pathlib import Path

from shared.kernel.settings import Settings

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands() -> None:
    block = README.read_text().split("```")[1]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()[1:]] == [
        "python3 dev.py run",
        "python3 dev.py test",
    ]


def test_ci_runs_the_readme_test_command() -> None:
    script = (README.parent / ".ci" / "run").read_text()
    assert "python3 dev.py test" in [
        line.removeprefix("exec ").strip() for line in script.splitlines()
    ]


def test_configuration_table_matches_settings() -> None:
    section = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([A-Z_]+)`", section, flags=re.MULTILINE))
    documented |= set(re.findall(r"^\| `[A-Z_]+` / `([A-Z_]+)`", section, flags=re.MULTILINE))
    expected = {name.upper() for name in Settings.model_fields} | {"DEEPSEEK_API_KEY"}
    assert documented == expected
