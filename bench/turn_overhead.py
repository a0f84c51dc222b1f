"""Benchmark: Parley's own time per turn — the turn's wall time minus the model's.

    .venv/bin/python -m bench.turn_overhead [--turns 40] [--versus PATH] [--rounds 3]

Direct, tool and complex turns (`tests.support.turn_kinds`) go through the chat function's own path
against the fake model answering at once; the time model calls were in flight (request out,
reply in, over HTTP to the fake; calls that overlap — parallel executors — counted once) is
measured around the model client and subtracted, so what is left is Parley's work on the
turn's critical path: the database, events, prompts, tools. Prints p50/p95 per kind.

`--versus PATH` runs the same benchmark in another checkout (e.g. a `git worktree` of an
earlier commit) in alternation with this one, `--rounds` times, and prints both and their
ratio: on a shared machine only figures taken side by side compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.support.turn_kinds import KINDS, Harness, Kind, ModelClock, harness, send

ROOT = Path(__file__).resolve().parents[1]


async def measure(h: Harness, kind: Kind, turns: int) -> list[float]:
    services = h.services()
    clock = ModelClock(services)
    user = await h.user()
    try:
        for _ in range(3):
            await send(services, user, kind)  # warm up: imports, pool, tokenizer
        own: list[float] = []
        for _ in range(turns):
            clock.reset()
            started = time.perf_counter()
            await send(services, user, kind)
            own.append(time.perf_counter() - started - clock.seconds)
        return own
    finally:
        await services.aclose()


def quantiles(values: list[float]) -> tuple[float, float]:
    ms = sorted(v * 1000 for v in values)
    return statistics.median(ms), statistics.quantiles(ms, n=20)[18]


async def run(turns: int, kinds: list[Kind]) -> dict[str, tuple[float, float]]:
    figures: dict[str, tuple[float, float]] = {}
    with harness() as h:
        for kind in kinds:
            figures[kind] = quantiles(await measure(h, kind, turns))
    return figures


def versus(path: Path, args: argparse.Namespace) -> None:
    trees = {"this": ROOT, "versus": path.resolve()}
    taken: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            command = [
                sys.executable,
                "-m",
                "bench.turn_overhead",
                "--json",
                "--turns",
                str(args.turns),
                "--kinds",
                ",".join(args.kinds),
            ]
            out = subprocess.run(command, cwd=tree, check=True, capture_output=True, text=True)
            taken[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'':<8} {'this p50':>10} {'versus p50':>11} {'ratio':>6}   (ms; median of rounds)")
    for kind in args.kinds:
        mine = statistics.median(r[kind][0] for r in taken["this"])
        theirs = statistics.median(r[kind][0] for r in taken["versus"])
        print(f"{kind:<8} {mine:>10.1f} {theirs:>11.1f} {mine / theirs:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--versus", type=Path, help="another checkout to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    if args.versus:
        versus(args.versus, args)
        return
    figures = asyncio.run(run(args.turns, args.kinds))
    if args.json:
        print(json.dumps(figures))
        return
    for kind, (p50, p95) in figures.items():
        print(f"{kind:<8} Parley's own time p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")


if __name__ == "__main__":
    main()
