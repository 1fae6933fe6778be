"""Rules for the fif prompts (registered with rule_task)."""
