"""The exit statuses of the `heliabuild` command (docs/cli.md, "Exit statuses"): each meaning has its own."""

from __future__ import annotations

EXIT_INTERNAL_FAULT = 1  # Python's own status for an uncaught exception
EXIT_BAD_INPUT = 2
EXIT_VERIFICATION = 3  # a run's outputs differ from the reference by more than the policy's bound
EXIT_REGRESSION = 4  # compare --max-regression found a figure that regressed by more than the limit
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
