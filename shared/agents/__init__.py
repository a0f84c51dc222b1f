"""The agents: planner and executor logic, plans, prompts, context budgets."""
