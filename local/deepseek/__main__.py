"""`python -m local.deepseek [--host H] [--port P]`: serve the offline demo model."""

from __future__ import annotations

import argparse

import uvicorn

from local.deepseek.app import FakeModel
from local.deepseek.pace import DEEPSEEK_TOKENS_PER_SECOND, Pace


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Parley's offline demo model (OpenAI-compatible).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument(
        "--tokens-per-second",
        type=float,
        default=DEEPSEEK_TOKENS_PER_SECOND,
        help=f"how fast replies stream, one token a chunk (default DeepSeek's "
        f"{DEEPSEEK_TOKENS_PER_SECOND:g}; 0: at once)",
    )
    args = parser.parse_args(argv)
    print(f"parley-demo model at http://{args.host}:{args.port}/v1 (set LLM_BASE_URL to it)")
    model = FakeModel(pace=Pace(args.tokens_per_second))
    uvicorn.run(model.app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
