"""What end users are shown never names a server setting: operators read those in logs."""

from __future__ import annotations

import re

SETTINGS = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b")
"""An environment variable's name (`PLANNER_TOKEN_BUDGET`, `DEEPSEEK_API_KEY`, …)."""


def assert_names_no_setting(text: str | None) -> None:
    named = SETTINGS.findall(text or "")
    assert not named, f"shown to users, names server settings {named}: {text!r}"
