"""Rules for the mirag prompts (registered with rule_task)."""
