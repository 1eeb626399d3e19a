"""FAKE FVP: a test double of Arm's Corstone FVP executables. It is NOT an FVP and simulates nothing.

Whose behaviour it copies, line by line (each fixture line below names its source):
- the FVP's command line and output: ../shared/targets/fvp.md ("Options every anchor passes", "Output and
  ending"), which cites MLIA's Corstone backend, TFLM's and MLEK's scripts and Arm's FVP documentation;
- the prebuilt runner's UART log: the strings of the AXFs `mlia-ethos-u` 0.1.0 ships (`strings` on
  `mlia/resources/backends/applications/inference_runner-sse-300-*-tflm-ethos-U55-Default-noTA/
  mlek_inference_runner.axf`, MLEK 25.12.0) and a QEMU mps3-an547 boot of it (tests/test_fvp_real_runner.py
  feeds those real bytes to the reader): CRLF line ends, `INFO - ` prefixes, the base64 JSON metrics line,
  `INFO - program terminating...`, EOT, the exit code as one raw byte.

The tests copy this file, with a shebang to the test interpreter, into a folder on PATH under the name of a
real FVP executable (FVP_Corstone_SSE-300_Ethos-U55, ..._Ethos-U65, FVP_Corstone_SSE-310,
FVP_Corstone_SSE-310_Ethos-U65, FVP_Corstone_SSE-320). It then

1. checks its whole argument vector against the options documented for that target:
   `-a <existing file> --data <existing file>@0x90000000`, then exactly the `-C` options of the board (UART0 to
   stdout, unbuffered, shutdown on EOT and on EXITTHESIM, telnet and visualisation off, the MAC option of the
   board with a count that NPU has), `--stat` and `--timelimit <seconds>`; never the fast NPU mode. A vector
   that differs exits 97 with the reason on stderr. The two shutdown options may be left out, as an FVP
   allows: then, as the FVP does, it does not stop at EOT but runs on until its `--timelimit`;
2. prints what the prebuilt runner and the FVP print, the scenario chosen by `FAKE_FVP_SCENARIO`: `good` (the
   default), `exit-1` (a complete log, then the FVP exits 1), `error` (`ERROR - Inference failed.`),
   `mismatch` (the driver's MAC mismatch line; the model's count from `FAKE_FVP_COMPILED_MACS`), `no-metrics`,
   `missing-metric` (no `NPU ACTIVE`), `count-mismatch` (two metrics lines), `overflow` (the runner's overflow
   warning for NPU ACTIVE), `garbage` (bytes that are no log), `no-eot` (the inference never ends: the
   `--timelimit` stops the FVP), `hang` (the FVP never ends; the host must stop it), `cut` (the FVP dies
   mid-line). `FAKE_FVP_CODE_BYTE=0` leaves out the exit-code byte after EOT (the FVP may or may not pass
   it).

With `FAKE_FVP_RECORDS` set, it stands in for an FVP running heliabuild's AOT firmware: the application is given
without `--data` (the firmware holds its model), and the UART output it replays is the record stream in that
file (the tests capture it from the real firmware, linked with a test double of the Ethos-U driver, on QEMU),
then the core-platform ending, `Application exit code: 0.`, EOT and `EXITTHESIM`, as heliabuild's
firmware/c/corstone300/uart.c writes it. Scenario `bad-checksum` replays the stream with one record's checksum
changed, `exit-1` the whole stream and its ending before the FVP exits 1, `cut` the stream cut short by an FVP
that dies.

The counters are made up from the model file: NPU ACTIVE is its size in bytes, the beats fixed fractions of
it, so a test computes what a good run must publish. `--version` prints what an FVP prints (facts file:
`Fast Models [11.x.y (date)]` and a copyright line, no word "version"). Each call appends its argument vector as
one JSON line to `$FAKE_FVP_LOG` when that is set, its process id as one line to `$FAKE_FVP_PIDS`, and the
SHA-256 of the model it was given as one line to `$FAKE_FVP_MODELS` when that is set (so a test sees which bytes
each job ran). With `FAKE_FVP_TOGETHER=<folder>:<n>` a job marks its start in the folder and waits (at most
30 s, else it refuses) until n jobs have started: jobs run one after another never get past it.
"""

import base64
import hashlib
import json
import os
import sys
import time

TARGETS = {
    "FVP_Corstone_SSE-300_Ethos-U55": ("mps3_board", "ethosu.num_macs", (32, 64, 128, 256), "u55"),
    "FVP_Corstone_SSE-300_Ethos-U65": ("mps3_board", "ethosu.num_macs", (256, 512), "u65"),
    "FVP_Corstone_SSE-310": ("mps3_board", "ethosu.num_macs", (32, 64, 128, 256), "u55"),
    "FVP_Corstone_SSE-310_Ethos-U65": ("mps3_board", "ethosu.num_macs", (256, 512), "u65"),
    "FVP_Corstone_SSE-320": ("mps4_board", "mps4_board.subsystem.ethosu.num_macs", (128, 256, 512, 1024, 2048), "u85"),
}
SHUTDOWN = ("uart0.shutdown_on_eot=1", "uart0.shutdown_tag=EXITTHESIM")

# The runner's counter names, in the order the facts file gives its metrics JSON (the names are strings of
# the shipped AXFs: `NPU ACTIVE`, `NPU IDLE`, `NPU TOTAL`, `NPU AXI0_RD_DATA_BEAT_RECEIVED`, ... in the U55/U65
# AXFs, `NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED`, ... in the U85 ones).
BEAT_NAMES = {
    "u55": ["NPU AXI0_RD_DATA_BEAT_RECEIVED", "NPU AXI0_WR_DATA_BEAT_WRITTEN", "NPU AXI1_RD_DATA_BEAT_RECEIVED"],
    "u85": [
        "NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED",
        "NPU ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN",
        "NPU ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED",
        "NPU ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN",
    ],
}
BEAT_NAMES["u65"] = BEAT_NAMES["u55"]

# The boot lines of the Corstone-300 runners, as QEMU's mps3-an547 boot of each AXF printed them (CRLF); the
# Corstone-310 and 320 runners run on a Cortex-M85 at other addresses, which no boot here has shown, so their
# fake logs start with the lines below.
QEMU_BOOT = {
    "u55": [
        "INFO - CPU: Cortex-M55 r0p1",
        "INFO - Enabling I-cache.",
        "INFO - Enabling D-cache.",
        "INFO - Initialising Ethos-U device@0x58102000",
        "INFO - Using Sram_Only/Shared_Sram memory mode",
    ],
    "u65": [
        "INFO - CPU: Cortex-M55 r0p1",
        "INFO - Enabling I-cache.",
        "INFO - Enabling D-cache.",
        "INFO - Initialising Ethos-U device@0x58102000",
        "INFO - Using Dedicated_Sram memory mode; fast cache size: 393216",
    ],
}
# The lines an FVP with an NPU gets past initialisation, each a string of the AXF.
BOOT = [
    "INFO - Ethos-U device initialised",  # AXF string
    "INFO - Ethos-U version info:",  # AXF string
    "INFO - \tMACs/cc:    {macs}",  # AXF string `\tMACs/cc:    %lu`
    "INFO - Model pointer: 0x90000000",  # AXF string `Model pointer: 0x%08x`; the --data address
    "INFO - 1 input tensor/s populated with {size} bytes with data read from 0x92000000",  # AXF string
    "INFO - Running inference... ",  # AXF string (its trailing space included)
]
COMPLETED = "INFO - Inference completed."  # AXF string `Inference completed.`
FAILED = "ERROR - Inference failed."  # AXF string `Inference failed.`; facts file
INVOKE_FAILED = "ERROR - Invoke failed."  # AXF string `Invoke failed.`; facts file, after the mismatch line
# AXF string `E: %s:%d: NPU config mismatch. npu.macs_per_cc=%u, optimizer.macs_per_cc=%u` (%s: the AXF's
# driver source `ethosu_driver.c`; the line number is made up, the reader reads the text after it)
MISMATCH = "E: ethosu_driver.c:123: NPU config mismatch. npu.macs_per_cc={npu}, optimizer.macs_per_cc={model}"
OVERFLOW = "WARN - Counter overflow detected for {name}."  # AXF string `Counter overflow detected for %s.`
RESULTS = ["INFO - Final results:", "INFO - Total number of inferences: 1"]  # AXF strings
TERMINATING = "INFO - program terminating..."  # AXF string; the QEMU boot's last line
EOT = b"\x04"  # facts file; the QEMU boot: EOT, then the exit code as one raw byte (0: `main` returned 0)
CODE_BYTE = b"\x00"
# facts file, "Output and ending": the FVP's stop lines and its `--stat` block (simulated, user, system and wall
# time; the layout of the block is this double's, no reader depends on it). Which of the documented reasons
# (Cycle limit, Simulated time, CPU time) `--timelimit` prints is not documented: this double prints CPU time.
STOPPING = "Info: Simulation is stopping. Reason: {reason} has been exceeded."
STOPPED = "Info: /OSCI/SystemC: Simulation stopped by user."
STAT = [
    "",
    "--- {name} statistics: ---------------------------------------------------",
    "Simulated time                          : 0.012345s",
    "User time                               : 0.250000s",
    "System time                             : 0.030000s",
    "Wall time                               : 0.310000s",
    "---------------------------------------------------------------------------",
]
# facts file: `--version` prints `Fast Models [11.x.y (date)]` and a copyright line, no word "version"
VERSION = "Fast Models [11.27.25 (Oct 11 2024)]\nCopyright 2000-2024 ARM Limited.\nAll Rights Reserved.\n"


def refuse(reason):
    sys.stderr.write(f"fake FVP: {reason}\n")
    sys.exit(97)


def check(argv, name, with_model=True):
    """The model path, the MAC count and whether the FVP shuts down on EOT; exit 97 for any other vector."""
    board, mac_option, macs, _ = TARGETS[name]
    if len(argv) < 2 or argv[0] != "-a" or (with_model and (len(argv) < 4 or argv[2] != "--data")):
        refuse(f"expected -a <application> --data <model>@0x90000000 first, got {argv[:4]}")
    if not os.path.isfile(argv[1]):
        refuse(f"application {argv[1]} does not exist")
    model = None
    rest = argv[2:]
    if with_model:
        model, _, address = argv[3].rpartition("@")
        if address != "0x90000000" or not os.path.isfile(model):
            refuse(f"--data {argv[3]} is not an existing model at 0x90000000")
        rest = argv[4:]
    elif "--data" in argv:
        refuse("heliabuild's AOT firmware holds its model: no --data expected")
    options, index = [], 0
    while index < len(rest) and rest[index] == "-C":
        options.append(rest[index + 1])
        index += 2
    tail = rest[index:]
    expected = {
        f"{board}.uart0.out_file=-",
        f"{board}.uart0.unbuffered_output=1",
        f"{board}.telnetterminal0.start_telnet=0",
        f"{board}.visualisation.disable-visualisation=1",
    }
    if board == "mps4_board":
        expected.add("vis_hdlcd.disable_visualisation=1")
    shutdown = {f"{board}.{option}" for option in SHUTDOWN}
    mac_settings = [o for o in options if o.startswith(mac_option + "=")]
    others = {o for o in options if o not in mac_settings and o not in shutdown}
    given = shutdown & set(options)
    if len(options) != len(set(options)) or others != expected or len(mac_settings) != 1 or len(given) == 1:
        refuse(
            f"-C options {sorted(options)} are not the documented set {sorted(expected | shutdown)} plus {mac_option}=N"
        )
    count = mac_settings[0].split("=", 1)[1]
    if not count.isdigit() or int(count) not in macs:
        refuse(f"{mac_settings[0]}: {name}'s NPU has {', '.join(map(str, macs))} MACs")
    if any("fast" in o for o in options):
        refuse("the fast NPU mode is not for measurements")
    if len(tail) != 3 or tail[0] != "--stat" or tail[1] != "--timelimit" or not tail[2].isdigit():
        refuse(f"expected --stat --timelimit <seconds> last, got {tail}")
    return model, int(count), bool(given), int(tail[2])


def metrics_line(size, npu, drop=None):
    """The runner's metrics line: base64 of its JSON (the facts file's shape; the AXF's format strings
    `{"profiling_group": "`, `", "count": `, `, "samples": [`, `{"name": "`, `", `, `"value": [`, `]}`, `, `,
    `<%s>`, `</%s>` and `metrics`, which json.dumps' default separators spell the same)."""
    values = {"NPU ACTIVE": size, "NPU IDLE": 7, "NPU TOTAL": size + 7}
    for k, metric in enumerate(BEAT_NAMES[npu]):
        values[metric] = size // (k + 2)
    samples = [{"name": n, "value": [v]} for n, v in values.items() if n != drop]
    document = [{"profiling_group": "Inference", "count": 1, "samples": samples}]
    return "INFO - <metrics>" + base64.b64encode(json.dumps(document).encode()).decode() + "</metrics>"


def uart(lines):
    """The runner's UART text: every line ends in CRLF (the QEMU boot's bytes)."""
    return "".join(line + "\r\n" for line in lines).encode()


def stop(out, name, reason=None):
    """The FVP's stop lines and `--stat` block, on its own stdout (LF)."""
    lines = ([STOPPING.format(reason=reason)] if reason else []) + [STOPPED] + [s.format(name=name) for s in STAT]
    out.write(("\n" + "\n".join(lines) + "\n").encode())
    out.flush()


def end(out, name, shutdown, timelimit, code=CODE_BYTE):
    """EOT and the code byte, then the FVP's stop: at once with shutdown_on_eot, else at the time limit (the
    firmware spins after EOT)."""
    out.write(EOT + (code if os.environ.get("FAKE_FVP_CODE_BYTE", "1") != "0" else b""))
    out.flush()
    if shutdown:
        stop(out, name)
        return
    time.sleep(timelimit)
    stop(out, name, "CPU time")


def replay_records(argv, name, records):
    _, _, shutdown, timelimit = check(argv, name, with_model=False)
    with open(records, encoding="ascii") as handle:
        lines = [line for line in handle.read().splitlines() if line.startswith("@hb1 ")]
    scenario = os.environ.get("FAKE_FVP_SCENARIO", "good")
    if scenario == "bad-checksum":
        line = lines[1]
        flipped = "0" if line[-1] != "0" else "1"
        lines[1] = line[:-1] + flipped
    elif scenario not in ("good", "exit-1", "cut"):
        refuse(f"unknown FAKE_FVP_SCENARIO {scenario!r} for the AOT firmware")
    out = sys.stdout.buffer
    if scenario == "cut":  # the FVP dies within the record stream
        out.write(("\n".join(lines[:2]) + "\n" + lines[2][:10]).encode())
        out.flush()
        sys.exit(139)
    # heliabuild's firmware/c/corstone300/uart.c: the records, `Application exit code: 0.`, EOT, `EXITTHESIM`
    out.write(("\n".join(lines) + "\nApplication exit code: 0.\n").encode())
    end(out, name, shutdown, timelimit, code=b"EXITTHESIM\n")
    if scenario == "exit-1":
        sys.exit(1)


def main():
    name = os.path.basename(sys.argv[0])
    if name not in TARGETS:
        refuse(f"{name} is not an FVP name this fake knows")
    argv = sys.argv[1:]
    if os.environ.get("FAKE_FVP_LOG"):
        with open(os.environ["FAKE_FVP_LOG"], "a") as log:
            log.write(json.dumps([name, *argv]) + "\n")
    if os.environ.get("FAKE_FVP_PIDS"):
        with open(os.environ["FAKE_FVP_PIDS"], "a") as log:
            log.write(f"{os.getpid()}\n")
    if argv == ["--version"]:
        sys.stdout.write(VERSION)
        return
    records = os.environ.get("FAKE_FVP_RECORDS")
    if records:
        replay_records(argv, name, records)
        return
    model, macs, shutdown, timelimit = check(argv, name)
    if os.environ.get("FAKE_FVP_MODELS"):
        with open(model, "rb") as handle, open(os.environ["FAKE_FVP_MODELS"], "a") as log:
            log.write(hashlib.sha256(handle.read()).hexdigest() + "\n")
    together = os.environ.get("FAKE_FVP_TOGETHER")
    if together:
        folder, count = together.rsplit(":", 1)
        open(os.path.join(folder, str(os.getpid())), "w").close()
        deadline = time.monotonic() + 30
        while len(os.listdir(folder)) < int(count):
            if time.monotonic() > deadline:
                refuse(f"fewer than {count} jobs started while this one waited: the jobs do not run in parallel")
            time.sleep(0.01)
    npu = TARGETS[name][3]
    size = os.path.getsize(model)
    scenario = os.environ.get("FAKE_FVP_SCENARIO", "good")
    out = sys.stdout.buffer
    qemu_boot = QEMU_BOOT.get(npu, []) if name.startswith("FVP_Corstone_SSE-300") else []
    boot = qemu_boot + [line.format(macs=macs, size=size) for line in BOOT]
    body = {
        "good": [COMPLETED, metrics_line(size, npu)],
        "exit-1": [COMPLETED, metrics_line(size, npu)],
        "error": [FAILED],
        "mismatch": [MISMATCH.format(npu=macs, model=os.environ.get("FAKE_FVP_COMPILED_MACS", "?")), INVOKE_FAILED],
        "no-metrics": [COMPLETED],
        "missing-metric": [COMPLETED, metrics_line(size, npu, drop="NPU ACTIVE")],
        "count-mismatch": [COMPLETED, metrics_line(size, npu), metrics_line(size, npu)],
        "overflow": [OVERFLOW.format(name="NPU ACTIVE"), COMPLETED, metrics_line(size, npu)],
    }
    if scenario in body:
        out.write(uart(boot + body[scenario] + RESULTS + [TERMINATING]))
        end(out, name, shutdown, timelimit)
        if scenario == "exit-1":
            sys.exit(1)
    elif scenario == "garbage":
        out.write(bytes(range(5, 256)) * 4)
        end(out, name, shutdown, timelimit)
    elif scenario == "no-eot":
        out.write(uart(boot))
        time.sleep(timelimit)
        stop(out, name, "CPU time")
    elif scenario == "hang":
        out.write(uart(boot))
        out.flush()
        time.sleep(3600)
    elif scenario == "cut":
        out.write(uart(boot) + metrics_line(size, npu)[:40].encode())
        out.flush()
        sys.exit(139)
    else:
        refuse(f"unknown FAKE_FVP_SCENARIO {scenario!r}")


if __name__ == "__main__":
    main()
