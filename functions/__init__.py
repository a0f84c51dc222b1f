"""The three functions: each a FastAPI app (`app.py`) plus a Lambda entry point (`handler.py`)."""
