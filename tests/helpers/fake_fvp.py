"""FAKE FVP: a test double of Arm's Corstone FVP executables. It is NOT an FVP and simulates nothing.

The tests copy this file, with a shebang to the test interpreter, into a folder on PATH under the name of a
real FVP executable (FVP_Corstone_SSE-300_Ethos-U55, ..._Ethos-U65, FVP_Corstone_SSE-310,
FVP_Corstone_SSE-310_Ethos-U65, FVP_Corstone_SSE-320). It then

1. checks its whole argument vector against the options documented for that target
   (../shared/targets/fvp.md): `-a <existing file> --data <existing file>@0x90000000`, then exactly the `-C`
   options of the board (UART0 to stdout, unbuffered, shutdown on EOT and on EXITTHESIM, telnet and
   visualisation off, the MAC option of the board with a count that NPU has), `--stat` and
   `--timelimit <seconds>`; never the fast NPU mode. A vector that differs exits 97 with the reason on stderr;
2. replays documented output chosen by `FAKE_FVP_SCENARIO`: `good` (the default), `missing-metric`,
   `count-mismatch`, `timeout`, `fault`, `no-eot`, `cut`.

With `FAKE_FVP_RECORDS` set, it stands in for an FVP running heliabuild's AOT firmware (firmware b): the
application is given without `--data` (the firmware holds its model), and the UART output it replays is the
record stream in that file (the tests capture it from the real firmware, linked with a test double of the
Ethos-U driver, on QEMU), then `Application exit code: 0.` and EOT. Scenario `bad-checksum` replays the stream
with one record's checksum changed.

The counters are made up from the model file: NPU ACTIVE is its size in bytes, the beats fixed fractions of
it, so a test computes what a good run must publish. `--version` prints a version line. Each call appends its
argument vector as one JSON line to `$FAKE_FVP_LOG` when that is set, and the SHA-256 of the model it was given
as one line to `$FAKE_FVP_MODELS` when that is set (so a test sees which bytes each job ran). With
`FAKE_FVP_TOGETHER=<folder>:<n>` a job marks its start in the folder and waits (at most 30 s, else it refuses)
until n jobs have started: jobs run one after another never get past it.
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


def refuse(reason):
    sys.stderr.write(f"fake FVP: {reason}\n")
    sys.exit(97)


def check(argv, name, with_model=True):
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
        f"{board}.uart0.shutdown_on_eot=1",
        f"{board}.uart0.shutdown_tag=EXITTHESIM",
        f"{board}.telnetterminal0.start_telnet=0",
        f"{board}.visualisation.disable-visualisation=1",
    }
    if board == "mps4_board":
        expected.add("vis_hdlcd.disable_visualisation=1")
    mac_settings = [o for o in options if o.startswith(mac_option + "=")]
    others = {o for o in options if o not in mac_settings}
    if len(options) != len(set(options)) or others != expected or len(mac_settings) != 1:
        refuse(f"-C options {sorted(options)} are not the documented set {sorted(expected)} plus {mac_option}=N")
    if int(mac_settings[0].split("=", 1)[1]) not in macs:
        print("E: NPU config mismatch")
        sys.exit(1)
    if any("fast" in o for o in options):
        refuse("the fast NPU mode is not for measurements")
    if len(tail) != 3 or tail[0] != "--stat" or tail[1] != "--timelimit" or not tail[2].isdigit():
        refuse(f"expected --stat --timelimit <seconds> last, got {tail}")
    return model


def metrics(size, npu, drop=None):
    if npu == "u85":
        names = [
            "NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED",
            "NPU ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN",
            "NPU ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED",
            "NPU ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN",
        ]
    else:
        names = ["NPU AXI0_RD_DATA_BEAT_RECEIVED", "NPU AXI0_WR_DATA_BEAT_WRITTEN", "NPU AXI1_RD_DATA_BEAT_RECEIVED"]
    values = {"NPU ACTIVE": size, "NPU IDLE": 7, "NPU TOTAL": size + 7}
    for k, metric in enumerate(names):
        values[metric] = size // (k + 2)
    samples = [{"name": n, "unit": "count", "value": [v]} for n, v in values.items() if n != drop]
    return "<metrics>" + base64.b64encode(json.dumps([{"samples": samples}]).encode()).decode() + "</metrics>"


BANNER = "telnetterminal0: Listening for serial connection on port 5000\nINFO - Ethos-U device initialised\n"
STOPPED = "Info: /OSCI/SystemC: Simulation stopped by user.\n"
STAT = "\n--- FVP stat ---\nSimulated time          : 0.01s\nTotal wall time         : 0.1s\n"


def replay_records(argv, name, records):
    check(argv, name, with_model=False)
    with open(records, encoding="ascii") as handle:
        lines = [line for line in handle.read().splitlines() if line.startswith("@hb1 ")]
    scenario = os.environ.get("FAKE_FVP_SCENARIO", "good")
    if scenario == "bad-checksum":
        line = lines[1]
        flipped = "0" if line[-1] != "0" else "1"
        lines[1] = line[:-1] + flipped
    elif scenario != "good":
        refuse(f"unknown FAKE_FVP_SCENARIO {scenario!r} for the AOT firmware")
    out = sys.stdout
    out.write(BANNER.replace("INFO - Ethos-U device initialised\n", ""))
    out.write("\n".join(lines) + "\nApplication exit code: 0.\n\x04EXITTHESIM\n" + STOPPED + STAT)
    out.flush()


def main():
    name = os.path.basename(sys.argv[0])
    if name not in TARGETS:
        refuse(f"{name} is not an FVP name this fake knows")
    argv = sys.argv[1:]
    if os.environ.get("FAKE_FVP_LOG"):
        with open(os.environ["FAKE_FVP_LOG"], "a") as log:
            log.write(json.dumps([name, *argv]) + "\n")
    if argv == ["--version"]:
        print(f"Fast Models [11.27.19 (Oct 11 2024)]\nFake {name} version 11.27_19 (a test double)")
        return
    records = os.environ.get("FAKE_FVP_RECORDS")
    if records:
        replay_records(argv, name, records)
        return
    model = check(argv, name)
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
    out = sys.stdout
    out.write(BANNER)
    if scenario == "good":
        out.write(metrics(size, npu) + "\nApplication exit code: 0.\n\x04EXITTHESIM\n" + STOPPED + STAT)
    elif scenario == "missing-metric":
        out.write(metrics(size, npu, drop="NPU ACTIVE") + "\nApplication exit code: 0.\n\x04EXITTHESIM\n" + STOPPED)
    elif scenario == "count-mismatch":
        out.write(metrics(size, npu) + "\n" + metrics(size, npu) + "\nApplication exit code: 0.\n\x04EXITTHESIM\n")
    elif scenario == "timeout":
        out.write("Info: Simulation is stopping. Reason: Simulated time has been exceeded.\n" + STOPPED + STAT)
    elif scenario == "fault":
        out.write("ERROR - HardFault: the CPU faulted at 0x10001234\nApplication exit code: 1.\n\x04EXITTHESIM\n")
    elif scenario == "no-eot":
        out.write(metrics(size, npu) + "\nApplication exit code: 0.\n" + STOPPED)
    elif scenario == "cut":
        out.write(metrics(size, npu)[:40])
    else:
        refuse(f"unknown FAKE_FVP_SCENARIO {scenario!r}")
    out.flush()


if __name__ == "__main__":
    main()
