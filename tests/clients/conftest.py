"""The local stack for `@parley/client`'s tests, as `python3 dev.py run` serves it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from local.seed import seed_demo
from local.stack import RunningStack, running_stack
from shared.db import Database
from shared.services import load_settings


@pytest.fixture(scope="module")
async def stack(database_url: str, db: Database) -> AsyncIterator[RunningStack]:
    """Realtime, the functions and the offline demo model, with the demo user's data."""
    await seed_demo(db)
    with pytest.MonkeyPatch.context() as env:
        for name in ("DEEPSEEK_API_KEY", "LLM_API_KEY", "LLM_BASE_URL", "APPROVALS"):
            env.delenv(name, raising=False)
        # A low channel limit, so a test reaches it with a few channels (each other test's
        # socket holds one channel, two while it rejoins).
        settings = load_settings(database_url=database_url, realtime_max_channels_per_client=4)
    async with running_stack(settings, database_url, port=0, realtime_port=0) as running:
        yield running
