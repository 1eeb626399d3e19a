"""The FVP command line of one job (../shared/targets/fvp.md, "Options every anchor passes").

`fvp_arguments(config, timelimit_s)` is every option but the executable, the application and the model:
UART0 to stdout, unbuffered; shutdown on EOT (and on the `EXITTHESIM` tag some FVP versions need); telnet
terminal and visualisation off; the Ethos-U MAC count matching the Vela accelerator config (`ethosu.num_macs`
on the MPS3 boards, `mps4_board.subsystem.ethosu.num_macs` on Corstone-320); `--stat`; `--timelimit`. It never
passes the fast NPU mode (`ethosu.extra_args="--fast"`, not timing-accurate). runner.json records
`recorded_command`: the same vector with the machine paths replaced by placeholders, so the record holds no
path of this machine.
"""

from __future__ import annotations

import os

from heliabuild.fvp.targets import TargetConfig

MODEL_ADDRESS = "0x90000000"
"""Where the prebuilt runner reads its model (`--data <model>@0x90000000`)."""
MAX_MODEL_BYTES = 32 << 20
"""The prebuilt runner's model area at 0x90000000: 32 MiB."""
DEFAULT_TIMELIMIT_S = 600
"""`--timelimit` when none is given (ExecuTorch's); a run without a limit can hang for hours."""
MAX_TIMELIMIT_S = 86400
EXECUTABLE = "<fvp>"
APPLICATION = "<application>"
MODEL = "<segment model>"


def fvp_arguments(config: TargetConfig, timelimit_s: int) -> list[str]:
    """The options of a measured job on `config`, limited to `timelimit_s` seconds (module docstring)."""
    board = config.target.board
    options = [
        f"{board}.uart0.out_file=-",
        f"{board}.uart0.unbuffered_output=1",
        f"{board}.uart0.shutdown_on_eot=1",
        f"{board}.uart0.shutdown_tag=EXITTHESIM",
        f"{board}.telnetterminal0.start_telnet=0",
        f"{board}.visualisation.disable-visualisation=1",
    ]
    if config.target.mps4:
        options.append("vis_hdlcd.disable_visualisation=1")
    options.append(f"{config.target.mac_option}={config.macs}")
    arguments: list[str] = []
    for option in options:
        arguments += ["-C", option]
    return [*arguments, "--stat", "--timelimit", str(int(timelimit_s))]


def job_command(
    executable: str | os.PathLike[str],
    application: str | os.PathLike[str],
    model: str | os.PathLike[str] | None,
    arguments: list[str],
) -> list[str]:
    """The argument vector of one job: `executable -a application --data model@0x90000000 arguments...`; with
    no `model` (heliabuild's AOT firmware holds its model), no `--data`."""
    data = [] if model is None else ["--data", f"{os.fspath(model)}@{MODEL_ADDRESS}"]
    return [os.fspath(executable), "-a", os.fspath(application), *data, *arguments]


def recorded_command(config: TargetConfig, timelimit_s: int, *, with_model: bool = True) -> list[str]:
    """The command line as runner.json records it: the executable, application and model as placeholders."""
    return job_command(EXECUTABLE, APPLICATION, MODEL if with_model else None, fvp_arguments(config, timelimit_s))


def command_from_record(
    record: list[str], executable: str | os.PathLike[str], application: str | os.PathLike[str], model: str
) -> list[str]:
    """The recorded command with its placeholders replaced by this machine's paths."""
    replaced = {EXECUTABLE: os.fspath(executable), APPLICATION: os.fspath(application)}
    data = f"{MODEL}@{MODEL_ADDRESS}"
    return [f"{model}@{MODEL_ADDRESS}" if part == data else replaced.get(part, part) for part in record]
