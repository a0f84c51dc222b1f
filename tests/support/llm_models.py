"""Model names and registry entries the agent and function tests use.

DeepSeek's twin serves each of them as a DeepSeek V4 model (thinking unless told not to, with
the `thinking` switch), and the registry says so: with Parley's default settings the planner's
calls think and the executors' do not, as they do against DeepSeek itself."""

PLANNER_MODEL = "test-planner"
EXECUTOR_MODEL = "test-executor"
THINKER_MODEL = "test-thinker"
SERVED = (PLANNER_MODEL, EXECUTOR_MODEL, THINKER_MODEL)
"""The test models the fake model server serves (beside DeepSeek's and the demo's names)."""
MODELS = """
[[model]]
match = "test-planner.*"
family = "test"
thinking = true
thinking_toggle = true
context_window = 64000
price = { cache_hit = "0.1", cache_miss = "1", output = "2" }

[[model]]
match = "test-executor.*"
family = "test"
thinking = true
thinking_toggle = true
context_window = 16000
price = { cache_hit = "0.05", cache_miss = "0.5", output = "1" }

[[model]]
match = "test-thinker.*"
family = "test"
thinking = true
context_window = 64000
price = { cache_hit = "0.1", cache_miss = "1", output = "2" }
"""
