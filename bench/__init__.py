"""Benchmarks (run by hand; they print figures, they assert nothing)."""
