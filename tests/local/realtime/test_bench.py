"""The latency benchmark still runs against today's schema (a few events per path and mode).

Figures are not asserted (they depend on the machine); only that every path delivers and the
benchmark prints its summary lines. Before this test the benchmark could break unnoticed.
"""

from __future__ import annotations

import pytest

from bench.realtime_latency import PATHS, run


async def test_the_latency_benchmark_runs_every_path(capsys: pytest.CaptureFixture[str]) -> None:
    await run(5, list(PATHS))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("events=")[0].split() for line in lines] == [
        [path, mode] for path in PATHS for mode in ("sequential", "burst")
    ]
