"""The AOT plan stage: heliaAOT-format plans and reports, transfer schedules, plans read back (docs/aot-plan.md)."""
