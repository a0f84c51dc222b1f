"""`@parley/client`'s browser example (clients/js/examples/browser/), as `npm run
example:browser` serves it, in Chromium against the local stack: it signs the demo user in,
watches a session, sends the demo message, shows the approval, approves, and shows the answer."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from local.seed import DEMO_USER_ID
from local.stack import RunningStack, write_client_env
from shared.db import Database
from tests.support.client_node import package_copy


@pytest.fixture
async def example_url(stack: RunningStack, tmp_path: Path) -> AsyncIterator[str]:
    """The example's page, served by the package's own script with this stack's values."""
    package = package_copy()
    env = write_client_env(stack, tmp_path)
    server = await asyncio.create_subprocess_exec(
        "node",
        "scripts/serve-example.mjs",
        cwd=package,
        env={**os.environ, "PARLEY_CLIENT_ENV": str(env), "PORT": "0"},
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdout is not None
    url = (await asyncio.wait_for(server.stdout.readline(), 30)).decode().strip()
    assert url.startswith("http://127.0.0.1:"), url
    yield url
    server.terminate()
    await server.wait()


async def test_the_browser_example_plays_the_demo_turn(
    browser: Browser, example_url: str, db: Database
) -> None:
    async with db.service() as conn:  # the demo user's calendar, whole again
        await conn.execute(
            "UPDATE calendar_events SET deleted_at = NULL WHERE user_id = %s", (DEMO_USER_ID,)
        )
    context = await browser.new_context()
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(example_url)
    await expect(page.locator("#status")).to_have_text("live")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator("#pending")).to_contain_text("delete_calendar_event")
    await expect(page.locator("#texts")).to_contain_text("(demo) Writing a plan.")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.locator("#answer-text")).to_contain_text(
        "completed: (demo) The tools returned"
    )
    await expect(page.locator("#answer-text")).to_contain_text('"deleted":true')
    await context.close()
    assert errors == []
