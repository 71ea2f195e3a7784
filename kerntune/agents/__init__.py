"""The agent loop: planner, generator (LLM or rule catalog), tuner and tester."""
