"""Result bundles: receipt, samples, statistics, manifest, reading and export (docs/runner.md)."""
