"""Rules for the mmgraph prompts (registered with rule_task)."""
