"""The planner: strategy, plans, delegation, synthesis, approvals."""
