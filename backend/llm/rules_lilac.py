"""Rules for the lilac prompts (registered with rule_task)."""
