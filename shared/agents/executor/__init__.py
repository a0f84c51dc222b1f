"""Running one plan step: the executor's, or the planner's own write step."""
