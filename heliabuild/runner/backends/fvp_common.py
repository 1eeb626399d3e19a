"""What the two FVP backends (fvp-prebuilt: Arm's prebuilt runner; fvp-aot: heliabuild's AOT firmware) share:
runner.json's `backend` (`fvp`) and the figures an FVP counts, the target resolved from Vela's accelerator
config, the FVP's time limit and the host's bound on a job, the sample figures of merged counters, and the UART
log a failed run keeps (docs/runner.md, "Running on an FVP").
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.files import write_atomic
from heliabuild.fvp.command import DEFAULT_TIMELIMIT_S, MAX_TIMELIMIT_S
from heliabuild.fvp.targets import TargetConfig, resolve_target
from heliabuild.results.scopes import NPU_CALLBACKS
from heliabuild.runner.measurement import Counts, Figures, Sanity, Scopes
from heliabuild.runner.record import FvpSection, FvpTargetRecord

BACKEND = "fvp"
"""runner.json's `backend` of both FVP backends; `fvp.firmware.source` tells them apart."""
SCOPES = Scopes(cycles=NPU_CALLBACKS, traffic_beats=NPU_CALLBACKS)
"""What an fvp run's figures count: NPU cycles and beats in the driver's callbacks of the measured invoke."""


def build_target(
    segments_document: Mapping[str, Any] | None,
    vela_model: bytes | None,
    fvp_target: str | None,
    timelimit_s: int | None,
    source: str,
) -> tuple[TargetConfig, int]:
    """The target that runs Vela's model (from the accelerator config segments.json records and the
    `fvp_target` choice) and the FVP's `--timelimit`; FvpError before anything is written."""
    if vela_model is None or segments_document is None:
        raise FvpError(
            f"{source}: backend fvp runs Vela's compiled model and reads its accelerator config from "
            "segments.json; pass both the Vela model and its segments.json",
            hint="heliabuild runner --vela-model M_vela.tflite --segments M_segments.json --backend fvp",
        )
    limit = DEFAULT_TIMELIMIT_S if timelimit_s is None else timelimit_s
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TIMELIMIT_S:
        raise FvpError(f"{source}: FVP time limit {limit!r} is not a whole number of seconds in 1..{MAX_TIMELIMIT_S}")
    return resolve_target(segments_document["vela"]["accelerator"], fvp_target, source=source), limit


def target_record(config: TargetConfig) -> FvpTargetRecord:
    """runner.json's `fvp.target` of `config`."""
    return FvpTargetRecord.from_json(config.to_json())


def host_bound(section: FvpSection, timeout_s: float | None) -> float:
    """The host's wall-clock bound on one job: the recorded `--timelimit` plus heliabuild.fvp.launch.GRACE_S,
    lowered to `timeout_s` when given."""
    from heliabuild.fvp.launch import GRACE_S

    bound = float(section.timelimit_s) + GRACE_S
    if timeout_s is not None:
        bound = min(bound, max(float(timeout_s), 0.001))
    return bound


def figures_of(merged: Mapping[str, Any]) -> Figures:
    """The typed figures of a sample's merged counters (heliabuild.fvp.counters.sample_figures)."""
    cycles = merged["cycles"]
    beats = merged["segment_traffic_beats"]
    sanity = merged["sanity"]
    return Figures(
        cycles=None if cycles is None else Counts(total=cycles["total"], segments=tuple(cycles["segments"])),
        traffic_beats=merged["traffic_beats"],
        segment_traffic_beats=None if beats is None else tuple(beats),
        sanity=Sanity(outputs_finite=sanity["outputs_finite"], counter_overflow=sanity["counter_overflow"]),
    )


def keep_log(error: Any, result_dir: Path | None, job: str) -> FvpError:
    """The FvpError to raise for `error` (a heliabuild.fvp.log.UnreadLog: a log its reader does not know), after
    keeping the job's UART log in the failed run's own folder: a new folder beside `result_dir` named
    `<result>.failed-<random>` (created for this run, so no file of the user's is touched), the log in it as
    `<job>.uart.log`, the bytes the FVP wrote. The message names the file."""
    if result_dir is None:
        return FvpError(error.message, hint=error.hint)
    parent = result_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{result_dir.name}.failed-", dir=parent))
        path = folder / f"{job}.uart.log"
        write_atomic(path, error.output)
    except OSError as failure:
        return FvpError(f"{error.message} (the UART log could not be kept: {failure.strerror})", hint=error.hint)
    return FvpError(f"{error.message}; the UART log is kept in {path}", hint=error.hint)
