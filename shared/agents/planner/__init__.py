"""The planner: a user's turn, its plan, the steps it schedules, how the plan ends."""
