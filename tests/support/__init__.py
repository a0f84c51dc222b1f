"""What the tests share: databases, factories, the scripted model, the stack, fakes of the
services at their wire boundary."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root."""
