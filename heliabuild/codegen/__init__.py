"""The AOT module generator: C sources from a model and its `<prefix>_plan.json` (docs/firmware.md)."""
