"""Token batches paced to the project's Realtime budget: the arithmetic, and the batches an
emitter sends under a given load — counted on a fake clock, never timed."""

from __future__ import annotations

import math
from uuid import uuid4

import pytest

from shared.db import Database
from shared.events import EventEmitter
from shared.events.pacing import (
    FIRST_REFRESH_SECONDS,
    REFRESH_SECONDS,
    Load,
    Pacer,
    RealtimeBudget,
)
from tests.support.factories import make_session, make_user
from tests.support.in_memory_publisher import InMemoryPublisher

FREE = RealtimeBudget(100)
"""Free's 100 messages a second, 80% of it planned, one client per session."""


def counted_rate(budget: RealtimeBudget, load: Load) -> float:
    """Messages a second as Realtime counts them (each sent, and each delivery) when every
    stream sends a batch every `interval`, with the load's durable events and last batches."""
    interval = budget.interval(load)
    timed = 0.0 if math.isinf(interval) else load.streams / interval
    durable = (load.durable or 0) / load.window
    return (durable + load.ended / load.window + timed) * (1 + budget.subscribers)


@pytest.mark.parametrize("quota", [50, 100, 500])
@pytest.mark.parametrize("streams", [1, 5, 30, 40, 150])
@pytest.mark.parametrize("durable", [0, 100, 200])
def test_what_parley_sends_stays_within_its_share_of_the_quota(
    quota: int, streams: int, durable: int
) -> None:
    budget = RealtimeBudget(quota, share=0.8, subscribers=1)
    load = Load(streams=streams, ended=streams // 2, durable=durable, window=10.0)
    must = (durable + streams // 2) / 10.0 * 2  # durable events and last batches: not paced
    if must <= 0.8 * quota:  # they fit: the timed batches fill the rest, and no more
        assert counted_rate(budget, load) <= 0.8 * quota + 1e-9
    else:  # they alone are over it: the streams send nothing on a timer
        assert math.isinf(budget.interval(load))
        assert counted_rate(budget, load) == must


def test_the_interval_grows_with_the_answers_streaming_at_once() -> None:
    # 40 broadcasts a second (80 of 100 messages, each counted sent and delivered once), less
    # 15 durable events and 5 last batches a second: 20 a second for the timed batches.
    load = Load(streams=30, ended=50, durable=150, window=10.0)
    assert FREE.broadcasts == 40.0
    assert FREE.token_broadcasts(load) == 20.0
    assert FREE.interval(load) == 30 / 20  # each of 30 streams: a batch every 1.5 s
    assert FREE.interval(Load(streams=1)) == FREE.floor  # alone: the emitter's own 0.1 s
    assert FREE.interval(Load(streams=300)) == 300 / 40
    assert RealtimeBudget(500).interval(load) == 30 / (200 - 20)  # Pro: 6 s of margin to spare


def test_a_burst_reads_as_the_rate_it_is_not_spread_over_the_window() -> None:
    # 40 turns that started together ended together a second ago: 40 last batches, 80 events.
    burst = Load(streams=40, ended=40, durable=80, ended_age=1.0, durable_age=1.0)
    assert burst.last_batches_per_second == 40 / 2  # over at least 2 s, not over 10
    assert burst.durable_per_second == 80 / 2
    assert math.isinf(FREE.interval(burst))  # nothing left for timed batches now
    spread = Load(streams=40, ended=40, durable=80, ended_age=9.5, durable_age=9.9)
    assert spread.durable_per_second == 80 / 9.9 and FREE.interval(spread) > FREE.floor
    assert Load(streams=1, durable=5, durable_age=30.0).durable_per_second == 5 / 10  # window


def test_more_clients_per_session_cost_more_per_batch() -> None:
    two = RealtimeBudget(100, subscribers=2)
    assert two.broadcasts == 80 / 3
    assert two.interval(Load(streams=30)) == 30 / (80 / 3)


def test_with_nothing_left_a_stream_sends_only_its_last_batch() -> None:
    assert math.isinf(FREE.interval(Load(streams=10, durable=400)))  # 40 a second durable
    assert math.isinf(FREE.interval(Load(streams=10, ended=400)))


def test_uncounted_durable_events_are_assumed_one_a_second_per_stream() -> None:
    # Public channels: no index to count their rows by.
    assert FREE.token_broadcasts(Load(streams=10, durable=None)) == 40 - 10


def test_the_count_of_durable_events_stops_where_nothing_would_be_left() -> None:
    assert FREE.cap() == 401  # 40 a second over 10 s, and one more
    assert math.isinf(FREE.interval(Load(streams=1, durable=FREE.cap())))


def test_load_as_the_database_returns_it() -> None:
    got = Load.of({"streams": 3, "ended": 2, "durable": None, "window": 10, "ended_age": 4})
    assert got == Load(3, 2, None, 10.0, ended_age=4.0)
    assert Load.of(None) is None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def stream(emitter: EventEmitter, clock: Clock, tokens: int, per_second: float) -> None:
    """`tokens` one-character tokens at `per_second`, as a model streams them (no plan: the
    load stays as given, never read again)."""
    for k in range(tokens):
        clock.now = k / per_second
        await emitter.token("x", plan_id=None, agent_id=None)
    await emitter.flush_tokens()


async def paced(db: Database, load: Load | None) -> tuple[InMemoryPublisher, EventEmitter, Clock]:
    session = await make_session(db, await make_user(db))
    clock, memory = Clock(), InMemoryPublisher()
    pacer = Pacer(FREE, private=True, clock=clock)
    emitter = EventEmitter(db, memory, session_id=session.id, clock=clock, pacer=pacer)
    emitter.reserve_tokens(1000, 100, load)
    return memory, emitter, clock


async def test_a_paced_stream_sends_a_batch_an_interval_and_its_last(db: Database) -> None:
    memory, emitter, clock = await paced(db, Load(streams=30, ended=50, durable=150))
    await stream(emitter, clock, tokens=360, per_second=60)  # 6 s of a real model
    batches = [e.data["text"] for e in memory.events]
    # Timed batches at tokens 90, 181 and 272 (each 1.5 s after its first), then the last.
    assert [len(b) for b in batches] == [91, 91, 91, 87]
    assert "".join(batches) == "x" * 360


async def test_unpaced_a_stream_sends_a_batch_a_tenth_of_a_second(db: Database) -> None:
    memory, emitter, clock = await paced(db, Load(streams=1))
    await stream(emitter, clock, tokens=360, per_second=60)
    # 7 or 8 tokens a batch (the one 0.1 s after the first closes it): about 8 a second.
    assert 360 // 8 <= len(memory.events) <= math.ceil(360 / 7)
    assert "".join(e.data["text"] for e in memory.events) == "x" * 360


async def test_with_no_budget_left_the_answer_goes_in_one_batch(db: Database) -> None:
    memory, emitter, clock = await paced(db, Load(streams=30, durable=1000))
    await stream(emitter, clock, tokens=360, per_second=60)
    assert [e.data["text"] for e in memory.events] == ["x" * 360]


async def test_a_stream_reads_the_load_again_soon_after_it_starts_then_every_few_seconds(
    db: Database,
) -> None:
    _, emitter, clock = await paced(db, Load(streams=300, durable=0))  # registered at 0
    pacer, plan = emitter.pacer, uuid4()
    assert pacer is not None

    async def read_at(now: float) -> bool:
        """Whether a token at `now` made the stream read the load (renewing its row)."""
        clock.now, before = now, pacer.load
        await emitter.token("x", plan_id=plan, agent_id=None)
        return pacer.load is not before

    assert not await read_at(FIRST_REFRESH_SECONDS - 0.1)
    assert await read_at(FIRST_REFRESH_SECONDS)  # soon: a crowd starting at once sees itself
    assert not await read_at(FIRST_REFRESH_SECONDS + REFRESH_SECONDS - 0.1)
    assert await read_at(FIRST_REFRESH_SECONDS + REFRESH_SECONDS)  # then every 2 s
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT ended_at IS NULL AND expires_at > now() AS live "
            "FROM parley_private.realtime_streams WHERE plan_id = %s",
            (plan,),
        )
        assert await cur.fetchone() == {"live": True}  # each reading renewed the stream's row
