"""Real qemu-m55 result bundles: heliabuild's firmware of the synthetic chain on real QEMU, through the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest


def chain_runs_on_qemu(folder: Path, firmware_library: Path, names: Sequence[str]) -> list[Path]:
    """One qemu-m55 runner of the synthetic chain (seed 0) in `folder`, run once into `folder/<name>` for each
    of `names`, with the session's firmware library (`firmware_library`, conftest) as the firmware cache."""
    from heliabuild.aot.stage import write_plan
    from heliabuild.cli import main
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
        model = folder / "chain.tflite"
        save_model(synthesize("chain", seed=0), model)
        plan = write_plan(model, folder / "plan", "net", "mps3_an547").plan
        argv = ["runner", "--model", model, "--aot-plan", plan, "--backend", "qemu-m55", "-o", folder / "runner"]
        assert main([str(a) for a in argv]) == 0
        for name in names:
            assert main(["run", str(folder / "runner" / "runner.json"), "-o", str(folder / name)]) == 0
    return [folder / name for name in names]
