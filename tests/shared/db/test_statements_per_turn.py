"""How many statements a turn sends to Postgres — a count, not a timing, so a regression fails.

Counted by a dedicated embedded Postgres that logs every statement (`tests.support.statement_log`;
`bench.sql_per_turn` prints the same figures with the statements sent most often). A `BEGIN`
and a `COMMIT` count as statements. The limits are the lean-turn targets: a direct turn in at
most 12 statements and 4 transactions, a tool turn in 20, a complex turn of three executor
steps in 120. Each turn is the chat function's own path (`tests.support.turn_kinds`) after one turn
of the same kind has warmed the process up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from local.auth.keys import mint_token
from local.realtime import RealtimeConfig, RealtimeServer
from shared.auth.access_tokens import User
from shared.services import Services
from tests.functions.conftest import SECRET
from tests.support.statement_log import Statements, log_size, logging_server, read_log
from tests.support.turn_kinds import Harness, Kind, harness, send

APP = "parley_statement_count"


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harness, Path]]:
    server, log = logging_server(tmp_path_factory.mktemp("logging-postgres"))
    with harness(server) as h:
        yield h, log


@pytest.fixture(scope="module")
async def warm(logged: tuple[Harness, Path]) -> AsyncIterator[tuple[Services, User, Path]]:
    h, log = logged
    services = h.services(application_name=APP)
    user = await h.user()
    yield services, user, log
    await services.aclose()


async def one_turn(
    warm: tuple[Services, User, Path], kind: Kind, application: str = APP
) -> Statements:
    services, user, log = warm
    await send(services, user, kind)  # first use of everything this kind needs
    start = log_size(log)
    answer = await send(services, user, kind)
    assert (answer.status, answer.strategy) == ("completed", kind)
    return read_log(log, start, application)


async def test_a_direct_turn_is_a_few_statements(warm: tuple[Services, User, Path]) -> None:
    sent = await one_turn(warm, "direct")
    assert len(sent) <= 12 and sent.transactions <= 4, sent.sent


async def test_a_tool_turn_stays_within_twenty_statements(
    warm: tuple[Services, User, Path],
) -> None:
    sent = await one_turn(warm, "tool")
    assert len(sent) <= 20, sent.sent


async def test_a_complex_turn_of_three_steps_stays_within_120_statements(
    warm: tuple[Services, User, Path],
) -> None:
    sent = await one_turn(warm, "complex")
    assert len(sent) <= 120, sent.repeated(10)


@pytest.mark.parametrize(("kind", "statements"), [("direct", 6), ("tool", 17), ("complex", 34)])
async def test_the_statement_counts_are_the_docs(
    warm: tuple[Services, User, Path], kind: Kind, statements: int
) -> None:
    """The figures of docs/explanation/performance.md, held exactly: a change that adds a round
    trip shows here, well before it reaches a target above (and updates the page's count)."""
    assert len(await one_turn(warm, kind)) == statements


@pytest.mark.parametrize(("kind", "statements"), [("direct", 6), ("tool", 17)])
async def test_pacing_to_the_realtime_quota_adds_no_statement(
    logged: tuple[Harness, Path], kind: Kind, statements: int
) -> None:
    """With Realtime configured, the statement before a streamed call registers its stream and
    reads the project's load, and the one after it ends the stream: no round trip of their own
    (the fake model streams at once; a real one's stream reads the load again every 2 s)."""
    h, log = logged
    config = RealtimeConfig(database_url=h.url, port=0, jwt_secret=SECRET)
    async with RealtimeServer(config) as realtime:
        key = mint_token(SECRET, role="service_role")
        paced = {"supabase_url": realtime.url, "supabase_service_role_key": key}
        services = h.services(application_name=f"{APP}_paced", **paced)
        try:
            sent = await one_turn((services, await h.user(), log), kind, f"{APP}_paced")
        finally:
            await services.aclose()
    assert len(sent) == statements, sent.sent
    assert any("realtime_load" in sql for _, sql in sent.sent)  # folded into a statement
