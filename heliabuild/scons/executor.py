"""The executor of the heavy stages in SCons: `--helia-executor=URL` (or $HELIA_EXECUTOR), and the writing
back of a job's outputs (docs/scale.md).

The actions of HeliaVela, HeliaFencePlan, the firmware link and HeliaRun on qemu-m55 or fvp describe their
stage as a job (heliabuild.executor.stages) and hand it to `run_stage`, which runs it with the executor the
command line names (`local`, the default, or `dask://host:port`) and writes each output over its target
with heliabuild.files.write_all_or_nothing: every target complete, or none. Which executor ran a job is in
no signature, so a build on a cluster and a local build of the same sources are up to date with each
other. HeliaRun publishes a bundle that came back as the library publishes one (`run_bundle`); a litert
run measures this host, so it always runs here.

When SCons runs one job at a time (`-j1`, its default: the jobs then run on its main thread), the local
executor runs Vela inside the SCons process (heliabuild.executor.local, heliabuild.vela.in_process), where
numpy and LiteRT are loaded already; with `-j2` or more each Vela compile is a subprocess, as several run
at once on threads and file descriptors are per process. The outputs and warnings are the same either way
(docs/scons.md, "Where Vela runs").

With an executor other than `local`, each job's line (where it ran, how long) is appended to JOURNAL in the
top folder (heliabuild.executor.journal), outside every target. An executor error that many jobs of a build
hit at once (the scheduler went away) is printed once.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from SCons.Errors import UserError
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.files import remove_files, write_all_or_nothing
from heliabuild.scons.messages import EXIT_BAD_INPUT, report_failure, stage_failed, written_by_this_stage

if TYPE_CHECKING:  # heliabuild.executor is imported when a stage runs, not by a no-op build
    from heliabuild.executor import Executor
    from heliabuild.executor.job import Job, JobResult

OPTION = "helia_executor"
SHARED_OPTION = "helia_shared_path"
JOURNAL = ".sconsign.heliabuild.executor.jsonl"
"""The journal of the jobs a non-local executor ran, in the top folder."""

_chosen: list[Executor] = []
_lock = threading.Lock()
_reported: set[str] = set()


def add_options() -> None:
    """Add `--helia-executor=URL` and `--helia-shared-path=DIR` to the SCons command line (once per run)."""
    from SCons.Script import AddOption
    from SCons.Script.Main import OptionsParser

    if OptionsParser.has_option("--helia-executor"):
        return
    AddOption(
        "--helia-executor",
        dest=OPTION,
        type="string",
        metavar="URL",
        help="where heliabuild's heavy stages run: local (the default) or dask://HOST:PORT (default $HELIA_EXECUTOR)",
    )
    AddOption(
        "--helia-shared-path",
        dest=SHARED_OPTION,
        type="string",
        metavar="DIR",
        help="a folder every Dask worker sees at the same path: inputs inside it are sent by path "
        "(default $HELIA_EXECUTOR_SHARED)",
    )


def executor() -> Executor:
    """The executor of this SCons run (heliabuild.executor.executor_for of the options, local jobs in this
    process when SCons runs one job at a time); a UserError for a URL that names none. Chosen once, closed
    when SCons exits."""
    from SCons.Script import GetOption

    from heliabuild.executor import executor_for
    from heliabuild.executor.job import ExecutorError

    with _lock:
        if not _chosen:
            one_at_a_time = GetOption("num_jobs") == 1 and threading.current_thread() is threading.main_thread()
            try:
                chosen = executor_for(GetOption(OPTION), GetOption(SHARED_OPTION), in_process=one_at_a_time)
            except ExecutorError as error:
                raise UserError(f"heliabuild: {error.message}") from None
            _chosen.append(chosen)
            atexit.register(chosen.close)
        return _chosen[0]


def check_choice() -> None:
    """Choose the executor now (executor) when the options or HELIA_EXECUTOR name one other than `local`, so
    a bad URL stops the build before anything runs; the local executor is made when a stage first runs."""
    from SCons.Script import GetOption

    from heliabuild.executor import EXECUTOR_VARIABLE, LOCAL

    url = GetOption(OPTION)
    if (url if url is not None else os.environ.get(EXECUTOR_VARIABLE) or LOCAL) != LOCAL:
        executor()


def _journal_path() -> str:
    from SCons.Script import Dir

    return os.path.join(Dir("#").get_abspath(), JOURNAL)


def run_stage(job: Job, files: dict[str, Path], targets: Sequence[Node]) -> JobResult:
    """Run `job` and write its outputs over `targets` (module docstring); the JobResult. Raises the stage's
    HeliaError (as the library raised it where the job ran) or an ExecutorError."""
    result = _run(job, files)
    by_name = {_name(node): Path(node.get_abspath()) for node in targets}
    if sorted(result.outputs) != sorted(by_name):
        raise RuntimeError(f"{job.title}: the job wrote {sorted(result.outputs)}, the targets are {sorted(by_name)}")
    write_all_or_nothing({by_name[name]: data for name, data in result.outputs.items()})
    return result


def _name(node: Node) -> str:
    from heliabuild.executor.stages import job_name

    return job_name(str(node))


def _run(job: Job, files: dict[str, Path]) -> JobResult:
    from heliabuild.executor import LOCAL
    from heliabuild.executor.job import ExecutorError
    from heliabuild.executor.journal import record

    chosen = executor()
    result = chosen.run(job, files)
    if chosen.address != LOCAL:
        record(_journal_path(), job, result, chosen.address)
    if result.failure is not None:  # an ExecutorError of the worker (tools differ) stays one, for _first_report
        kind = ExecutorError if result.failure.kind == ExecutorError.__name__ else HeliaError
        raise kind(result.failure.message, hint=result.failure.hint)
    return result


def run_bundle(runner_json: str, result_dir: str) -> Path:
    """Run the runner at `runner_json` and publish its bundle at `result_dir`; the path of result.json. A
    qemu-m55 or fvp runner runs as a `run` job; a litert runner here (heliabuild.runner.lifecycle)."""
    from heliabuild.executor.stages import RUN_RESOURCES, run_job, runner_backend
    from heliabuild.results.bundle import publish_bundle
    from heliabuild.runner.lifecycle import run_runner

    if runner_backend(runner_json) not in RUN_RESOURCES:
        return run_runner(runner_json, result_dir)
    job, files = run_job(runner_json, os.path.relpath(result_dir))
    result = _run(job, files)
    prefix = job.outputs[0]
    return publish_bundle(result_dir, {name.removeprefix(prefix): data for name, data in result.outputs.items()})


def _first_report(error: HeliaError) -> bool:
    """Whether `error` is to be printed: not an executor error already printed in this run (for the
    scheduler being gone, any such error)."""
    from heliabuild.executor.job import ExecutorError, SchedulerUnreachable

    key = SchedulerUnreachable.__name__ if isinstance(error, SchedulerUnreachable) else error.message
    if not isinstance(error, ExecutorError):
        return True
    with _lock:
        first = key not in _reported
        _reported.add(key)
    return first


def failed(error: HeliaError, targets: Sequence[Node]) -> int:
    """heliabuild.scons.messages.stage_failed, printing an executor error only the first time (_first_report)."""
    if _first_report(error):
        return stage_failed(error, targets)
    remove_files(written_by_this_stage(targets))
    return EXIT_BAD_INPUT


def run_failed(error: HeliaError) -> int:
    """heliabuild.scons.messages.report_failure, printing an executor error only the first time."""
    return report_failure(error) if _first_report(error) else EXIT_BAD_INPUT
