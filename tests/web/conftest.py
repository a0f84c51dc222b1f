"""Parley Console in a real browser: Playwright drives a system Chromium against the local stack.

The stack is the one `python3 dev.py run` serves (Realtime, the three functions, the console and
the offline demo model), here on the test module's database. Chromium is found on PATH (Debian's
`chromium` package) or at `PARLEY_CHROMIUM`; without one the tests skip and say so. Playwright's
own browser downloads are never used.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, WebSocket, async_playwright, expect

from local.seed import seed_demo
from local.stack import DEMO_MODEL_LATENCY, RunningStack, running_stack
from shared.db import Database
from shared.services import load_settings

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# No sandbox (containers, root), no GPU, and nothing that phones home: the network is closed.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = os.environ.get("PARLEY_SCREENSHOTS")
"""A folder to save the docs' screenshots in (`PARLEY_SCREENSHOTS=docs`); unset: not saved."""

expect.set_options(timeout=20_000)


def find_chromium() -> str | None:
    """`PARLEY_CHROMIUM`, else the first Chromium-family browser on PATH."""
    configured = os.environ.get("PARLEY_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else shutil.which(configured)
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


@pytest.fixture(scope="session")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip(
            "no Chromium found for the console's browser tests: install one (Debian/Ubuntu: "
            "apt-get install chromium) or set PARLEY_CHROMIUM to its path"
        )
    return path


@pytest.fixture(scope="module")
async def stack(database_url: str, db: Database) -> AsyncIterator[RunningStack]:
    """The local stack with the demo user's data, answering with the offline demo model."""
    await seed_demo(db)
    with pytest.MonkeyPatch.context() as env:
        for name in ("DEEPSEEK_API_KEY", "LLM_API_KEY", "LLM_BASE_URL", "APPROVALS"):
            env.delenv(name, raising=False)
        settings = load_settings(database_url=database_url)
    # Screenshots are taken at `dev.py run`'s pace, so they show a turn as a person sees it.
    latency = DEMO_MODEL_LATENCY if SCREENSHOTS else 0.0
    async with running_stack(
        settings, database_url, port=0, realtime_port=0, model_latency=latency
    ) as running:
        yield running


@pytest.fixture(scope="module")
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        yield launched
        await launched.close()


@dataclass
class Wire:
    """What one page received over Realtime: the broadcast events (and which of them were
    replayed on a join), and join replies."""

    events: list[dict[str, Any]] = field(default_factory=list)
    replayed: list[dict[str, Any]] = field(default_factory=list)
    joins: list[dict[str, Any]] = field(default_factory=list)

    def watch(self, socket: WebSocket) -> None:
        socket.on("framereceived", self.frame)

    def frame(self, frame: str | bytes) -> None:
        """Take one frame the page received."""
        if isinstance(frame, bytes):  # serializer 2.0.0's binary user broadcast (kind 4):
            self._binary(frame)  # how broadcasts sent from the database arrive
            return
        if not frame.startswith("["):
            return
        _, _, topic, event, payload = json.loads(frame)  # serializer 2.0.0
        if event == "broadcast" and isinstance(payload.get("payload"), dict):
            self._event(payload["payload"], payload.get("meta"))
        elif event == "phx_reply" and topic.startswith("realtime:session:"):
            self.joins.append({"topic": topic, **payload})

    def _binary(self, frame: bytes) -> None:
        # u8 4 | u8 topic_len | u8 event_len | u8 meta_len | u8 json, the strings, the payload
        if len(frame) < 5 or frame[0] != 4 or frame[4] != 1:
            return
        meta_at = 5 + frame[1] + frame[2]
        meta = json.loads(frame[meta_at : meta_at + frame[3]]) if frame[3] else None
        payload = json.loads(frame[meta_at + frame[3] :])
        if isinstance(payload, dict):
            self._event(payload, meta)

    def _event(self, payload: dict[str, Any], meta: Any) -> None:
        self.events.append(payload)
        if isinstance(meta, dict) and meta.get("replayed"):
            self.replayed.append(payload)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == kind]


@dataclass
class Tab:
    page: Page
    wire: Wire
    errors: list[str]


@pytest.fixture
async def tab(browser: Browser, stack: RunningStack) -> AsyncIterator[Tab]:
    """A fresh browser context (no stored sign-in) on the console; fails on any script error."""
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await context.new_page()
    wire, errors = Wire(), []
    page.on("websocket", wire.watch)
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(f"{stack.url}/")
    yield Tab(page, wire, errors)
    await context.close()
    assert errors == [], f"the console threw: {errors}"


async def screenshot(page: Page, name: str) -> None:
    """Save a docs screenshot when `PARLEY_SCREENSHOTS` names a folder."""
    if SCREENSHOTS:
        await page.screenshot(path=str(Path(SCREENSHOTS) / f"console-{name}.png"))
