"""Runner build (freeze) and execution: the acquisition lifecycle (docs/runner.md)."""
