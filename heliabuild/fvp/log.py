"""Reading one FVP job's UART log (../shared/targets/fvp.md, "Output and ending"; "Counters").

The UART log is the authority, not the FVP's exit status. `read_job(run, npu, source)` accepts a job only when
its log, read in this order,

1. was not stopped by the host (its wall-clock bound or output bound: heliabuild.firmware.qemu.run_bounded);
2. does not end mid-line (a final line without its newline, or a `<metrics>` without `</metrics>`);
3. holds no FVP stop reason (`Info: Simulation is stopping. Reason: <limit> has been exceeded.`, a timeout);
4. holds no failure line (`ERROR - `, `TFLM - Failed to`, `TFLM - Didn't find op for`, `E: NPU config mismatch`);
5. reports `Application exit code: 0.` exactly once, then EOT (0x04);
6. holds exactly one `<metrics>...</metrics>` block: base64 of a JSON list of groups, each
   `{"samples": [{"name": NAME, "value": [n, ...]}]}`, every name once, each required counter present as a
   non-negative integer below 2**64, `NPU ACTIVE` at most `NPU TOTAL`.

Each failure is one FvpError naming the job and what the log said. The counters (JobCounters): `cycles` is
`NPU ACTIVE`; `traffic_beats` the AXI read and write beats (U55/U65: AXI0 read, AXI0 write, AXI1 read and,
when reported, AXI1 write; U85: SRAM and external read and write). The PMU event counters are 32 bits wide,
and the runner does not report their overflow flags: when the 64-bit cycle counter `NPU TOTAL` reaches
2**32 an event counter may have wrapped, so the job is flagged `overflow` and its event counts are not
used (never a wrapped value published as a count).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from heliabuild.errors import FvpError, HeliaError

EOT = "\x04"
EVENT_COUNTER_LIMIT = 1 << 32
COUNTER_LIMIT = 1 << 64
MAX_METRICS_BYTES = 1 << 20
ACTIVE = "NPU ACTIVE"
TOTAL = "NPU TOTAL"
BEATS = {
    "ethos-u55": (
        "NPU AXI0_RD_DATA_BEAT_RECEIVED",
        "NPU AXI0_WR_DATA_BEAT_WRITTEN",
        "NPU AXI1_RD_DATA_BEAT_RECEIVED",
    ),
    "ethos-u85": (
        "NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED",
        "NPU ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN",
        "NPU ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED",
        "NPU ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN",
    ),
}
BEATS["ethos-u65"] = BEATS["ethos-u55"]
OPTIONAL_BEATS = {"ethos-u55": ("NPU AXI1_WR_DATA_BEAT_WRITTEN",), "ethos-u65": ("NPU AXI1_WR_DATA_BEAT_WRITTEN",)}
FAILURE_PREFIXES = ("ERROR - ", "TFLM - Failed to", "TFLM - Didn't find op for", "E: NPU config mismatch")

_STOPPING = re.compile(r"Simulation is stopping\. Reason: (.*?) has been exceeded")
_EXIT_CODE = re.compile(r"Application exit code: (-?[0-9]+)\.")
_METRICS = re.compile(r"<metrics>(.*?)</metrics>", re.DOTALL)


@dataclass(frozen=True)
class JobCounters:
    """What one job measured: NPU active cycles and AXI beats (None when `overflow` flags a possible wrap),
    and every metric the runner reported."""

    cycles: int | None
    traffic_beats: int | None
    overflow: bool
    metrics: dict[str, int]


def _shown(line: str) -> str:
    text = line.strip()
    return repr(text if len(text) <= 200 else text[:200] + "...")


def read_job(run: Any, npu: str, source: str) -> JobCounters:
    """The counters of the job `run` (a heliabuild.firmware.qemu.QemuRun) on an `npu` FVP; FvpError for a job
    whose log does not show a complete, successful inference (module docstring). `source` names the job."""
    log, code = read_log(run, source)
    if code != 0:
        raise FvpError(f"{source}: the runner ended with application exit code {code}")
    blocks = _METRICS.findall(log)
    if len(blocks) != 1:
        raise FvpError(
            f"{source}: the UART log holds {len(blocks)} <metrics> blocks; one job runs one inference of one "
            "command stream, so exactly one is expected"
        )
    return counters_of(_metrics(blocks[0], source), npu, source)


def read_log(run: Any, source: str) -> tuple[str, int]:
    """The UART log of `run` and the application exit code it reports, after steps 1 to 5 of the module
    docstring but the exit code's value (heliabuild's own firmware reports why it failed in its records);
    FvpError for a log that does not show the firmware end."""
    if run.timed_out:
        raise FvpError(f"{source}: the FVP did not finish within its wall-clock bound and was stopped")
    if run.output_overflow:
        raise FvpError(f"{source}: the FVP wrote more output than the host reads, and was stopped")
    log = run.console.replace("\r\n", "\n")
    tail = log.rsplit("\n", 1)[-1]
    if tail.strip(EOT + " \t") and EOT not in tail:
        raise FvpError(
            f"{source}: the UART log ends mid-line ({_shown(tail)}): the FVP stopped before the runner ended"
        )
    if "<metrics>" in log and log.count("<metrics>") != log.count("</metrics>"):
        raise FvpError(f"{source}: the UART log holds a <metrics> block that never ends: the log was cut")
    lines = log.split("\n")
    for line in lines:
        stopping = _STOPPING.search(line)
        if stopping is not None:
            raise FvpError(
                f"{source}: the FVP stopped the simulation: {stopping.group(1)} has been exceeded (a timeout); "
                "nothing is published",
                hint="raise the time limit (heliabuild runner --fvp-timelimit), or run a smaller model",
            )
    for line in lines:
        text = line.strip(EOT).lstrip()
        if text.startswith(FAILURE_PREFIXES):
            raise FvpError(f"{source}: the runner failed: {_shown(text)}")
    codes = [int(match.group(1)) for match in _EXIT_CODE.finditer(log)]
    if not codes:
        said = run.diagnostics.strip().splitlines()[-1:]
        raise FvpError(
            f"{source}: the UART log reports no 'Application exit code': the runner did not end"
            + (f" (the FVP said {_shown(said[0])})" if said else "")
        )
    if len(codes) > 1:
        raise FvpError(f"{source}: the UART log reports {len(codes)} application exit codes; expected one")
    if EOT not in log[_EXIT_CODE.search(log).end() :]:  # type: ignore[union-attr]
        raise FvpError(f"{source}: the runner reported its exit code but sent no EOT: the log is incomplete")
    return log, codes[0]


def _metrics(block: str, source: str) -> dict[str, int]:
    from heliabuild.documents import parse_json

    text = "".join(block.split())
    if len(text) > MAX_METRICS_BYTES:
        raise FvpError(f"{source}: <metrics> holds {len(text)} characters, more than {MAX_METRICS_BYTES}")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise FvpError(f"{source}: <metrics> is not base64") from None
    try:
        document = parse_json(raw, source, "<metrics>", error=FvpError)
    except HeliaError as error:
        raise FvpError(error.message) from None
    metrics: dict[str, int] = {}
    groups = document if isinstance(document, list) else None
    if groups is None:
        raise FvpError(f"{source}: <metrics>: expected a list of profiling groups")
    for number, group in enumerate(groups):
        samples = group.get("samples") if isinstance(group, dict) else None
        if not isinstance(samples, list):
            raise FvpError(f"{source}: <metrics>[{number}].samples: missing; expected a list of counters")
        for entry in samples:
            name = entry.get("name") if isinstance(entry, dict) else None
            values = entry.get("value") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not isinstance(values, list) or len(values) != 1:
                raise FvpError(f"{source}: <metrics>[{number}]: a counter is not {{name, value: [n]}}: {entry!r:.200}")
            value = values[0]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < COUNTER_LIMIT:
                raise FvpError(f"{source}: <metrics>: {name}: {value!r:.50} is not a 64-bit counter value")
            if name in metrics:
                raise FvpError(f"{source}: <metrics>: {name} is reported twice")
            metrics[name] = value
    return metrics


def counters_of(metrics: dict[str, int], npu: str, source: str) -> JobCounters:
    """The JobCounters of one job's `metrics` on an `npu` FVP (module docstring); FvpError for a missing or
    contradictory counter."""
    required = (ACTIVE, TOTAL, *BEATS[npu])
    missing = [name for name in required if name not in metrics]
    if missing:
        raise FvpError(
            f"{source}: <metrics> lacks {', '.join(missing)}; the {npu} runner reports "
            f"{', '.join(required)}: nothing is published"
        )
    if metrics[ACTIVE] > metrics[TOTAL]:
        raise FvpError(f"{source}: <metrics>: {ACTIVE} {metrics[ACTIVE]} exceeds {TOTAL} {metrics[TOTAL]}")
    beats = [*BEATS[npu], *(name for name in OPTIONAL_BEATS.get(npu, ()) if name in metrics)]
    if metrics[TOTAL] >= EVENT_COUNTER_LIMIT or any(metrics[name] >= EVENT_COUNTER_LIMIT for name in beats):
        return JobCounters(cycles=None, traffic_beats=None, overflow=True, metrics=dict(metrics))
    return JobCounters(
        cycles=metrics[ACTIVE],
        traffic_beats=sum(metrics[name] for name in beats),
        overflow=False,
        metrics=dict(metrics),
    )
