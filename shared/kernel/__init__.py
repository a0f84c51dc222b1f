"""The kernel: errors, settings, usage and small helpers. Imports nothing of Parley."""
