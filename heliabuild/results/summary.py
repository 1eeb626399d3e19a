"""The facts a build's summary table shows of one verified result bundle (heliabuild.scons.summary prints
the table; heliabuild.scons.runner keeps the facts of a bundle its integrity check verified)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from heliabuild.results.statistics import median
from heliabuild.results.verdict import input_source, verdict
from heliabuild.units import kib_text

if TYPE_CHECKING:
    from heliabuild.results.reader import Result


def bundle_facts(result: Result) -> tuple[str, ...]:
    """What a row shows of a verified bundle: its backend, its segments, Vela's estimated cycles per segment
    (an estimate), Vela's SRAM and off-chip flash allocation of the compiled model (Vela's compile-time
    figures, `-` where the bundle has none), the measured figure's median per invoke (instructions on
    QEMU, host wall time on LiteRT, each named by its unit), the verification verdict in short (its reference
    and the differing elements, heliabuild.results.verdict) and the input source (`zeros` or the tensor_io
    files)."""
    cycles = [segment["estimated_cycles"] for segment in result.segments]
    samples = result.samples
    latencies = [s.latency_s for s in samples if s.latency_s is not None]
    instructions = [s.instructions["total"] for s in samples if s.instructions is not None]
    if instructions:
        measured = f"{median(instructions):.0f} instructions"
    elif latencies:
        measured = f"{median(latencies) * 1e6:.1f} us host"
    else:
        measured = "-"
    estimated = "/".join("-" if value is None else str(value) for value in cycles) or "-"
    backend = result.document["run_identity"]["backend"]
    vela = result.vela or {}
    memory = [kib_text(vela.get(figure)) for figure in ("sram_memory_used_kib", "off_chip_flash_memory_used_kib")]
    identity = result.document["run_identity"]
    checked = verdict(identity, samples).short()
    return (backend, str(len(cycles)), estimated, *memory, measured, checked, input_source(identity))
