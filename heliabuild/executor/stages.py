"""The heavy stages as jobs: what each runs on the machine that takes it, and how a client describes it.

Each function of FUNCTIONS runs in a job's private folder, where every input lies at its name and every
output is written at its name (heliabuild.executor.job); it calls the library exactly as a local build
does and returns the stage's warnings. Its third argument says whether the job runs in the client's own
process, which runs one job at a time on its main thread (the local executor of an SCons build at -j1):
then the `vela` function runs Vela inside that process (heliabuild.vela.in_process), which writes the same
files and warnings as a Vela subprocess, for less CPU; everywhere else it is ignored. The `*_job` functions
build the Job of a stage from the paths a local build would pass to the library, and give the local path of
each input name beside it.

| function | library call | tools compared | needs |
|---|---|---|---|
| `vela` | heliabuild.vela.compile | heliabuild, ethos-u-vela, ai-edge-litert | none |
| `plan-fences` | heliabuild.planning.plan_fences | heliabuild, ethos-u-vela, ai-edge-litert | none |
| `firmware-link` | heliabuild.firmware.toolchain.link_elf | heliabuild, arm-none-eabi-gcc | none |
| `run` | ...lifecycle.run_runner | heliabuild, ai-edge-litert, qemu-system-arm or mlia-ethos-u | qemu or fvp |
| `echo` | none: copies its inputs to its outputs | heliabuild | none |

`echo` is the round trip of an executor without a stage (bench/sweep.py measures it).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from heliabuild.executor.job import ExecutorError, InputFile, Job
from heliabuild.files import sha256_file

EXTERNAL = "external"
"""Names of files outside the client's working folder: `external/<16 hex of the folder's path>/<name>`, so
files of one folder stay side by side (a fenced model and its sidecar)."""

StageFunction = Callable[[Path, Mapping[str, Any], bool], tuple[str, ...]]
"""(job folder, options, in process one job at a time) -> the stage's warnings."""
Files = dict[str, Path]
"""Input name -> the file's path on the client."""

VELA_TOOLS = ("heliabuild", "ethos-u-vela", "ai-edge-litert")
RUN_RESOURCES = {"qemu-m55": ("qemu", "qemu-system-arm"), "fvp": ("fvp", "mlia-ethos-u")}
"""Runner backend -> the worker resource its runs need and the tool they run."""


def job_name(path: str | os.PathLike[str]) -> str:
    """The name of the client's `path` in a job: the path itself when it is relative and inside the working
    folder, else EXTERNAL's form."""
    text = os.path.normpath(os.fspath(path))
    if not os.path.isabs(text) and text != ".." and not text.startswith(f"..{os.sep}"):
        return text.replace(os.sep, "/")
    absolute = os.path.abspath(text)
    folder = hashlib.sha256(os.path.dirname(absolute).encode("utf-8")).hexdigest()[:16]
    return posixpath.join(EXTERNAL, folder, os.path.basename(absolute))


def _inputs(paths: Sequence[str | os.PathLike[str]]) -> tuple[tuple[InputFile, ...], Files]:
    """The inputs of the regular files among `paths`; a missing one is left out, so the stage reports it on the
    worker as it would locally."""
    files = {job_name(path): Path(path) for path in paths if os.path.isfile(path)}
    return tuple(InputFile(name, sha256_file(path)) for name, path in files.items()), files


def _at(folder: Path, name: str) -> Path:
    return folder / name


def _vela(folder: Path, options: Mapping[str, Any], in_process: bool) -> tuple[str, ...]:
    from heliabuild.vela import compile as vela_compile

    result = vela_compile(
        _at(folder, options["model"]),
        _at(folder, options["out_dir"]),
        accelerator=options["accelerator"],
        system_config=options["system_config"],
        memory_mode=options["memory_mode"],
        config=[_at(folder, name) for name in options["config"]],
        optimise=options["optimise"],
        extra_args=options["extra_args"],
        in_process=in_process,
    )
    return tuple(result.warnings)


def vela_job(
    model: str,
    out_dir: str,
    *,
    config: Sequence[str] = (),
    accelerator: str,
    system_config: str | None,
    memory_mode: str | None,
    optimise: str | None,
    extra_args: Sequence[str],
) -> tuple[Job, Files]:
    """The `vela` job of heliabuild.vela.compile(model, out_dir, ...): the model, its sidecar when one lies
    beside it, and the configuration files are its inputs; Vela's four outputs in `out_dir` its outputs."""
    from heliabuild.fence.names import sidecar_path_for
    from heliabuild.vela.names import default_system_config, output_names

    sidecar = sidecar_path_for(Path(model))
    paths = [model, *([sidecar] if sidecar.is_file() else []), *config]
    inputs, files = _inputs(paths)
    out = job_name(out_dir)
    names = output_names(model, system_config or default_system_config(accelerator))
    options = {
        "model": job_name(model),
        "out_dir": out,
        "config": [job_name(path) for path in config],
        "accelerator": accelerator,
        "system_config": system_config,
        "memory_mode": memory_mode,
        "optimise": optimise,
        "extra_args": list(extra_args),
    }
    outputs = tuple(posixpath.normpath(posixpath.join(out, name)) for name in names.values())  # out may be `.`
    return Job("vela", inputs, options, outputs, VELA_TOOLS), files


def _plan_fences(folder: Path, options: Mapping[str, Any], _in_process: bool) -> tuple[str, ...]:
    from heliabuild.files import write_json
    from heliabuild.planning import plan_fences

    plan = plan_fences(
        _at(folder, options["model"]),
        _at(folder, options["per_layer"]),
        options["budget_cycles"],
        options["min_coverage"],
    )
    write_json(_at(folder, options["output"]), plan.to_json())
    return ()


def plan_fences_job(
    model: str, per_layer: str, output: str, budget_cycles: int, min_coverage: float
) -> tuple[Job, Files]:
    """The `plan-fences` job writing heliabuild.planning.plan_fences(model, per_layer, ...) to `output`."""
    inputs, files = _inputs([model, per_layer])
    options = {
        "model": job_name(model),
        "per_layer": job_name(per_layer),
        "output": job_name(output),
        "budget_cycles": budget_cycles,
        "min_coverage": min_coverage,
    }
    return Job("plan-fences", inputs, options, (job_name(output),), VELA_TOOLS), files


def _firmware_link(folder: Path, options: Mapping[str, Any], _in_process: bool) -> tuple[str, ...]:
    from heliabuild.firmware.toolchain import link_elf

    objects = [_at(folder, name) for name in options["objects"]]
    link_elf(objects, _at(folder, options["output"]), _at(folder, options["linker_script"]))
    return ()


def firmware_link_job(objects: Sequence[str], linker_script: str, output: str) -> tuple[Job, Files]:
    """The `firmware-link` job of heliabuild.firmware.toolchain.link_elf(objects, output, linker_script)."""
    inputs, files = _inputs([*objects, linker_script])
    options = {
        "objects": [job_name(path) for path in objects],
        "linker_script": job_name(linker_script),
        "output": job_name(output),
    }
    tools = ("heliabuild", "arm-none-eabi-gcc")
    return Job("firmware-link", inputs, options, (job_name(output),), tools), files


def _run(folder: Path, options: Mapping[str, Any], _in_process: bool) -> tuple[str, ...]:
    from heliabuild.runner.lifecycle import run_runner

    run_runner(_at(folder, options["runner"]), _at(folder, options["result_dir"]))
    return ()


def runner_backend(runner_json: str | os.PathLike[str]) -> str:
    """The backend runner.json names, read through heliabuild.runner.record.read_runner_record (validated
    first); RunnerError for a file that is no valid runner.json."""
    from heliabuild.runner.record import read_runner_record

    record, _ = read_runner_record(runner_json)
    return record.backend


def run_job(runner_json: str, result_dir: str) -> tuple[Job, Files]:
    """The `run` job of heliabuild.runner.lifecycle.run_runner(runner_json, result_dir): runner.json and the
    files it names are its inputs, every file of the bundle its output. A qemu-m55 run needs a worker with
    the `qemu` resource, an fvp run one with `fvp`. The runner is verified as a run verifies it."""
    from heliabuild.runner.freeze import load_runner

    runner = load_runner(runner_json)
    paths = [runner_json, *(str(Path(runner_json).parent / name) for name in sorted(runner.record.files))]
    inputs, files = _inputs(paths)
    resource, tool = RUN_RESOURCES.get(runner.backend, (None, None))
    options = {"runner": job_name(runner_json), "result_dir": job_name(result_dir)}
    tools = ("heliabuild", "ai-edge-litert", *((tool,) if tool else ()))
    resources = {resource: 1.0} if resource else {}
    return Job("run", inputs, options, (job_name(result_dir) + "/",), tools, resources), files


def _echo(folder: Path, options: Mapping[str, Any], _in_process: bool) -> tuple[str, ...]:
    for source, target in options["copies"]:
        destination = _at(folder, target)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_at(folder, source), destination)
    return ()


def echo_job(copies: Mapping[str, str]) -> tuple[Job, Files]:
    """The `echo` job copying each input path of `copies` to its output name."""
    inputs, files = _inputs(list(copies))
    pairs = [[job_name(source), job_name(target)] for source, target in sorted(copies.items())]
    return Job("echo", inputs, {"copies": pairs}, tuple(target for _, target in pairs), ("heliabuild",)), files


FUNCTIONS: Mapping[str, StageFunction] = {
    "vela": _vela,
    "plan-fences": _plan_fences,
    "firmware-link": _firmware_link,
    "run": _run,
    "echo": _echo,
}
"""Job function name -> what runs it in the job's folder."""


def stage_function(name: str) -> StageFunction:
    """The function of a job named `name`; ExecutorError for a name this heliabuild does not know."""
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise ExecutorError(
            f"job function {name!r} is not one of {', '.join(sorted(FUNCTIONS))}: the worker's heliabuild differs"
        ) from None
