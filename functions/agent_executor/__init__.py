"""An executor: one read-only agent working one plan step."""
