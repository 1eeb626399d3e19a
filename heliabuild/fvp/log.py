"""Reading one FVP job's UART log (../shared/targets/fvp.md, "Output and ending"; "Counters").

The UART log is the authority: a firmware's verdict is what it printed, read by that firmware's own ending.
`read_log(run, source, endings)` accepts a job's log only when, read in this order, it

1. was not stopped by the host (its wall-clock bound or output bound: heliabuild.subprocesses.run_bounded);
2. holds no FVP stop reason (`Info: Simulation is stopping. Reason: <limit> has been exceeded.`: a time limit);
3. holds no failure line: the Ethos-U driver's `E: <file>:<line>: NPU config mismatch. npu.X=A, optimizer.X=B`
   (named in words: "compiled for 128 MACs, the FVP has 256"), then the first line starting, after any
   log-level prefixes the firmware printed before it, with `ERROR - `, `E [ExecuTorch:`, `TFLM - Failed to`,
   `TFLM - Didn't find op for` or the driver's `E: <file>:<line>: `, quoted;
4. ends as one of `endings` ends, the text before the first EOT (0x04) being the firmware's:
   - `mlek`, Arm's prebuilt inference runner (MLEK 25.12.0, the AXFs `mlia-ethos-u` ships): lines in CRLF, the
     last `INFO - program terminating...` then EOT (its `_exit` then sends the exit code as one raw byte, which
     the FVP may or may not pass on: it is read neither way, `main` returning 0 whatever the inference did),
     and one `INFO - Inference completed.` line;
   - `core-platform`, firmware on ethos-u-core-platform's retarget (heliabuild's AOT firmware among it):
     `Application exit code: N.` exactly once, then EOT (`EXITTHESIM` after it is the FVP's tag, not read);
5. was not ended by an FVP that exited with a non-zero status (MLIA fails such a run too, after a complete log).

A log that shows neither ending, or that `read_job` finds no counters in, is an UnreadLog (an FvpError) naming
what was missing: heliabuild.runner.backends.fvp_common.keep_log keeps that log in the failed run's own folder
and names it.

`read_job(run, npu, source)` reads a prebuilt runner's job (either ending; a core-platform runner must report
exit code 0): exactly one `<metrics>BASE64</metrics>` block (MLEK: the line `INFO - <metrics>...</metrics>`),
base64 of the JSON `[{"profiling_group": ..., "count": ..., "samples": [{"name": NAME, "value": [n]}, ...]}]`,
every name once, each required counter present as a whole number in 0..2**63-1, `NPU ACTIVE` at most
`NPU TOTAL`. The counters (JobCounters): `cycles` is `NPU ACTIVE`; `traffic_beats` the data beats (U55/U65:
AXI0 read, AXI0 write, AXI1 read and, when reported, AXI1 write; U85: SRAM and external read and write). A
`WARN - Counter overflow detected for <name>.` line flags the job `overflow`, with null counts: a wrapped
value is never published as a count.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from heliabuild.errors import FvpError, HeliaError, UnreadLog

EOT = "\x04"
COUNTER_LIMIT = 1 << 63
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

MLEK = "mlek"
CORE_PLATFORM = "core-platform"
ENDINGS = (MLEK, CORE_PLATFORM)
MLEK_LAST_LINE = "INFO - program terminating..."
MLEK_COMPLETED = "INFO - Inference completed."
FAILURE_PREFIXES = ("ERROR - ", "E [ExecuTorch:", "TFLM - Failed to", "TFLM - Didn't find op for")

_STOPPING = re.compile(r"Simulation is stopping\. Reason: ([^\n]{1,80}?) has been exceeded")
_EXIT_CODE = re.compile(r"^Application exit code: (-?[0-9]+)\.$", re.MULTILINE)
_LEVELS = r"(?:(?:INFO|WARN|DEBUG) - |E: )*"
_FAILURE = re.compile(_LEVELS + r"(?:" + "|".join(re.escape(p) for p in FAILURE_PREFIXES) + r"|E: \S+:\d+: )")
_MISMATCH = re.compile(r"E: \S+:\d+: NPU config mismatch\. npu\.(\w+)=(\S+), optimizer\.\1=(\S+?)\.?$")
_OVERFLOW = re.compile(r"(?:(?:INFO|DEBUG) - )*WARN - (?:Counter o|O)verflow detected for (.+?)\.?$")
_WORDS = {
    "product": "product",
    "cmd_stream_version": "command stream version",
    "custom_dma": "custom DMA",
    "num_axi_sram": "AXI SRAM ports",
    "num_axi_ext": "AXI external ports",
}


@dataclass(frozen=True)
class UartLog:
    """A job's log as read: which ending it showed, the firmware's text before EOT (LF line ends), its lines,
    the exit code a core-platform ending reported (None for the prebuilt runner's), and the lines of
    `WARN - Counter overflow detected for <name>.` named."""

    ending: str
    text: str
    lines: tuple[str, ...]
    exit_code: int | None
    overflowed: tuple[str, ...]


@dataclass(frozen=True)
class JobCounters:
    """What one job measured: NPU active cycles and data beats (None when `overflow` flags a counter that
    wrapped), and every metric the runner reported."""

    cycles: int | None
    traffic_beats: int | None
    overflow: bool
    metrics: dict[str, int]


def _shown(line: str) -> str:
    text = line.strip()
    return repr(text if len(text) <= 200 else text[:200] + "...")


def _mismatch(line: str) -> str | None:
    found = _MISMATCH.search(line.strip())
    if found is None:
        return None
    field, npu, optimizer = found.groups()
    words = _WORDS.get(field, field.replace("_", " "))
    if field == "macs_per_cc":
        said = f"compiled for {optimizer} MACs, the FVP has {npu}"
    else:
        said = f"compiled for {words} {optimizer}, the FVP's NPU has {npu}"
    if field.startswith("num_"):
        said = f"compiled for {optimizer} {words}, the FVP's NPU has {npu}"
    return f"the Ethos-U driver refused the command stream: NPU config mismatch, {said} ({_shown(line)})"


def _failure(lines: list[str], source: str) -> FvpError | None:
    for line in lines:
        reason = _mismatch(line)
        if reason is not None:
            return FvpError(
                f"{source}: {reason}",
                hint="compile with Vela for the FVP's NPU configuration, or choose the FVP target it was compiled "
                "for (heliabuild runner --fvp-target)",
            )
    for line in lines:
        if _FAILURE.match(line.lstrip(" \t")):
            return FvpError(f"{source}: the runner failed: {_shown(line)}")
    return None


def read_log(run: Any, source: str, endings: tuple[str, ...] = ENDINGS) -> UartLog:
    """The log of the job `run` (a heliabuild.subprocesses.BoundedRun) read by steps 1 to 5 of the module
    docstring; FvpError for a log that does not show the firmware end, UnreadLog for one matching none of
    `endings`."""
    if run.timed_out:
        raise FvpError(f"{source}: the FVP did not finish within its wall-clock bound and was stopped")
    if run.output_overflow:
        raise FvpError(f"{source}: the FVP wrote more output than the host reads, and was stopped")
    console = run.console
    stopping = _STOPPING.search(console)
    if stopping is not None:
        raise FvpError(
            f"{source}: the FVP stopped the simulation: {stopping.group(1)} has been exceeded (a time limit); "
            "nothing is published",
            hint="raise the time limit (heliabuild runner --fvp-timelimit), or run a smaller model",
        )
    firmware, eot, _ = console.partition(EOT)
    lines = [line.removesuffix("\r") for line in firmware.split("\n")]
    failure = _failure(lines, source)
    if failure is not None:
        raise failure
    text = firmware.replace("\r\n", "\n")
    if not eot:
        said = run.diagnostics.strip().splitlines()[-1:]
        raise UnreadLog(
            f"{source}: the UART log holds no EOT (0x04): the firmware did not end (last line "
            f"{_shown(text.rstrip(chr(10)).rsplit(chr(10), 1)[-1])})"
            + (f"; the FVP said {_shown(said[0])}" if said else ""),
            run,
        )
    ending = _ending(firmware, text, endings, source, run)
    codes = [int(match.group(1)) for match in _EXIT_CODE.finditer(text)]
    if ending == MLEK and not any(line.strip() == MLEK_COMPLETED for line in lines):
        raise UnreadLog(f"{source}: the runner ended without reporting {MLEK_COMPLETED!r}", run)
    if run.exit_status not in (0, None):
        raise FvpError(
            f"{source}: the FVP exited with status {run.exit_status} after a complete log; a run whose FVP fails "
            "is not published (MLIA fails it too)"
        )
    overflowed = tuple(match.group(1) for line in lines if (match := _OVERFLOW.match(line.strip())) is not None)
    return UartLog(
        ending=ending,
        text=text,
        lines=tuple(lines),
        exit_code=codes[0] if ending == CORE_PLATFORM else None,
        overflowed=overflowed,
    )


def _ending(firmware: str, text: str, endings: tuple[str, ...], source: str, run: Any) -> str:
    """Which of `endings` the firmware's text before EOT shows; UnreadLog naming what each lacks."""
    codes = _EXIT_CODE.findall(text)
    if CORE_PLATFORM in endings and codes:
        if len(codes) > 1:
            raise FvpError(f"{source}: the UART log reports {len(codes)} application exit codes; expected one")
        if text.rstrip("\n").rsplit("\n", 1)[-1].strip() != f"Application exit code: {codes[0]}.":
            raise UnreadLog(f"{source}: the firmware wrote after 'Application exit code: {codes[0]}.'", run)
        return CORE_PLATFORM
    if MLEK in endings and firmware.endswith(MLEK_LAST_LINE + "\r\n"):
        return MLEK
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    wanted = []
    if MLEK in endings:
        wanted.append(f"the prebuilt runner's last line {MLEK_LAST_LINE!r} in CRLF")
    if CORE_PLATFORM in endings:
        wanted.append("core-platform's 'Application exit code: N.'")
    raise UnreadLog(
        f"{source}: the UART log shows no ending heliabuild reads: before its EOT is {_shown(last)}, not "
        + " or ".join(wanted),
        run,
    )


def read_job(run: Any, npu: str, source: str) -> JobCounters:
    """The counters of a prebuilt runner's job `run` on an `npu` FVP (module docstring); FvpError for a job
    whose log does not show a complete, successful inference. `source` names the job."""
    log = read_log(run, source)
    if log.exit_code not in (0, None):
        raise FvpError(f"{source}: the runner ended with application exit code {log.exit_code}")
    blocks = _blocks(log.text)
    if log.ending == MLEK:
        blocks = [block for line in log.lines if line.lstrip().startswith("INFO - ") for block in _blocks(line)]
    if not blocks:
        raise UnreadLog(f"{source}: the runner ended but printed no 'INFO - <metrics>...</metrics>' line", run)
    if len(blocks) != 1:
        raise FvpError(
            f"{source}: the UART log holds {len(blocks)} <metrics> blocks; one job runs one inference of one "
            "command stream, so exactly one is expected"
        )
    return counters_of(_metrics(blocks[0], source, run), npu, source, log.overflowed, run)


def _blocks(text: str) -> list[str]:
    """The text of each `<metrics>...</metrics>` block in `text`, found in one pass (a hostile log of many
    openings costs its length, not its length squared)."""
    blocks = []
    start = text.find("<metrics>")
    while start >= 0:
        end = text.find("</metrics>", start)
        if end < 0:
            break
        blocks.append(text[start + len("<metrics>") : end])
        start = text.find("<metrics>", end)
    return blocks


def _metrics(block: str, source: str, run: Any) -> dict[str, int]:
    from heliabuild.documents import parse_json

    text = "".join(block.split())
    if len(text) > MAX_METRICS_BYTES:
        raise UnreadLog(f"{source}: <metrics> holds {len(text)} characters, more than {MAX_METRICS_BYTES}", run)
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise UnreadLog(f"{source}: <metrics> is not base64", run) from None
    try:
        document = parse_json(raw, source, "<metrics>", error=FvpError)
    except HeliaError as error:
        found = _out_of_range(raw)
        if found is not None:
            raise FvpError(_not_a_count(source, *found)) from None
        raise UnreadLog(error.message, run) from None
    metrics: dict[str, int] = {}
    if not isinstance(document, list):
        raise UnreadLog(f"{source}: <metrics>: expected a list of profiling groups", run)
    for number, group in enumerate(document):
        samples = group.get("samples") if isinstance(group, dict) else None
        if not isinstance(samples, list):
            raise UnreadLog(f"{source}: <metrics>[{number}].samples: missing; expected a list of counters", run)
        for entry in samples:
            name = entry.get("name") if isinstance(entry, dict) else None
            values = entry.get("value") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not isinstance(values, list) or len(values) != 1:
                raise UnreadLog(
                    f"{source}: <metrics>[{number}]: a counter is not {{name, value: [n]}}: {entry!r:.200}", run
                )
            value = values[0]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < COUNTER_LIMIT:
                raise FvpError(_not_a_count(source, name, f"{value!r:.50}"))
            if name in metrics:
                raise FvpError(f"{source}: <metrics>: {name} is reported twice")
            metrics[name] = value
    return metrics


def _not_a_count(source: str, name: str, value: str) -> str:
    return (
        f"{source}: <metrics>: counter {name!r} is {value}, not a count (a whole number in 0..2**63-1): nothing "
        "is published"
    )


def _out_of_range(raw: bytes) -> tuple[str, str] | None:
    """The name and value of the first counter of the metrics document `raw` (at most MAX_METRICS_BYTES) whose
    value the JSON reader refused as out of the 64-bit range, or None."""
    import json

    try:
        document = json.loads(raw)
        for group in document:
            for entry in group["samples"]:
                value = entry["value"][0]
                if isinstance(value, int) and not isinstance(value, bool) and value >= COUNTER_LIMIT:
                    return str(entry["name"]), f"{value!r:.50}"
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None
    return None


def counters_of(
    metrics: dict[str, int], npu: str, source: str, overflowed: tuple[str, ...] = (), run: Any = None
) -> JobCounters:
    """The JobCounters of one job's `metrics` on an `npu` FVP, `overflowed` naming the counters the runner
    warned about (module docstring); FvpError for a missing or contradictory counter."""
    required = (ACTIVE, TOTAL, *BEATS[npu])
    missing = [name for name in required if name not in metrics]
    if missing:
        raise UnreadLog(
            f"{source}: <metrics> lacks {', '.join(missing)}; the {npu} runner reports "
            f"{', '.join(required)}: nothing is published",
            run,
        )
    if overflowed:
        return JobCounters(cycles=None, traffic_beats=None, overflow=True, metrics=dict(metrics))
    if metrics[ACTIVE] > metrics[TOTAL]:
        raise FvpError(f"{source}: <metrics>: {ACTIVE} {metrics[ACTIVE]} exceeds {TOTAL} {metrics[TOTAL]}")
    beats = [*BEATS[npu], *(name for name in OPTIONAL_BEATS.get(npu, ()) if name in metrics)]
    return JobCounters(
        cycles=metrics[ACTIVE],
        traffic_beats=sum(metrics[name] for name in beats),
        overflow=False,
        metrics=dict(metrics),
    )
