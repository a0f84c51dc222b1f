"""Code shared by Parley's three functions: settings, data layer, LLM, tools, agents, events."""
