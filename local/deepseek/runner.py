"""Run the fake model on a free localhost port in a background thread (tests, local stack)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType

from local.deepseek.app import FakeModel
from local.deepseek.contract import ModelProfile
from local.deepseek.pace import AT_ONCE, Pace
from local.serving import BackgroundServer
from shared.llm.tokens import DeepSeekTokenizer


class FakeModelServer(FakeModel):
    """The fake model served over real HTTP: `with FakeModelServer() as fake: fake.base_url`.

    `base_url` ends in `/v1`, as OpenAI's does; `/chat/completions` without it works too.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Iterable[str] | Mapping[str, ModelProfile] = (),
        tokenizer: DeepSeekTokenizer | None = None,
        latency: float = 0.0,
        api_key: str | None = None,
        pace: Pace = AT_ONCE,
    ) -> None:
        super().__init__(
            models=models, tokenizer=tokenizer, latency=latency, api_key=api_key, pace=pace
        )
        self._server = BackgroundServer(self.app, host=host, port=port, name="fake-model-server")

    @property
    def port(self) -> int:
        try:
            return self._server.port
        except RuntimeError:
            raise RuntimeError("the fake model server is not running; call start() first") from None

    @property
    def base_url(self) -> str:
        return f"http://{self._server.host}:{self.port}/v1"

    def start(self) -> FakeModelServer:
        """Bind the port, start uvicorn in a daemon thread, return once it accepts requests."""
        self._server.start()
        return self

    def stop(self) -> None:
        """Release stalled requests, shut uvicorn down, and wait for its thread."""
        self.release()
        self._server.stop()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
