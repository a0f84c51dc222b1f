"""Running supabase-js from the tests: a cached npm install and a line-oriented child process."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

SOURCE = ROOT / "tests" / "local" / "realtime" / "js"
CACHE = ROOT / ".parley" / "node" / "realtime-js"
TIMEOUT = 20.0


def node_project(*scripts: Path) -> Path:
    """`npm install` the pinned packages once into `.parley/node/realtime-js`, with `flow.mjs`
    and `scripts` beside them; skip without node."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are needed to run supabase-js; install Node.js 20+")
    CACHE.mkdir(parents=True, exist_ok=True)
    manifest = (SOURCE / "package.json").read_text()
    installed = CACHE / "node_modules" / "@supabase" / "supabase-js" / "package.json"
    if not installed.exists() or (CACHE / "package.json").read_text() != manifest:
        (CACHE / "package.json").write_text(manifest)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CACHE,
            check=True,
            capture_output=True,
            timeout=300,
        )
    for script in (SOURCE / "flow.mjs", *scripts):  # ESM resolves packages beside the script
        shutil.copy(script, CACHE / script.name)
    return CACHE


class NodeFlow:
    """The `flow.mjs` child process: JSON lines out, JSON commands in."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._seen: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, project: Path, settings: dict[str, Any]) -> NodeFlow:
        process = await asyncio.create_subprocess_exec(
            "node",
            str(project / "flow.mjs"),
            json.dumps(settings),
            cwd=project,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return cls(process)

    async def next(self, kind: str) -> dict[str, Any]:
        """The next line of `kind` (lines of other kinds are kept for later calls)."""
        for index, line in enumerate(self._seen):
            if line["kind"] == kind:
                return self._seen.pop(index)
        try:
            async with asyncio.timeout(TIMEOUT):
                while True:
                    line = await self._readline()
                    if line["kind"] == kind:
                        return line
                    self._seen.append(line)
        except TimeoutError:
            others = [line for line in self._seen if line["kind"] != "heartbeat"]
            raise AssertionError(f"no {kind!r} line from flow.mjs; unread: {others}") from None

    def unread(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self._seen if line["kind"] == kind]

    async def command(self, **command: Any) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(command).encode() + b"\n")
        await self._process.stdin.drain()

    async def stop(self) -> None:
        if self._process.returncode is None:
            await self.command(cmd="quit")
            try:
                await asyncio.wait_for(self._process.wait(), TIMEOUT)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()

    async def _readline(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        raw = await self._process.stdout.readline()
        if not raw:
            raise AssertionError(f"flow.mjs exited ({await self._process.wait()})")
        decoded: dict[str, Any] = json.loads(raw)
        return decoded
