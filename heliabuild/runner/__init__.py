"""Runner build (freeze) and execution: the acquisition lifecycle (docs/runner.md).

Every public name is importable from here; each loads its module on first use.
"""

from heliabuild.lazy import lazy_exports

_EXPORTS = {
    "BACKENDS": "heliabuild.runner.backends",
    "Backend": "heliabuild.runner.backend",
    "LiteRTInstance": "heliabuild.runner.litert",
    "Measurement": "heliabuild.runner.measurement",
    "Policy": "heliabuild.runner.policy",
    "PolicyError": "heliabuild.errors",
    "Runner": "heliabuild.runner.freeze",
    "RunnerError": "heliabuild.errors",
    "RunnerRecord": "heliabuild.runner.record",
    "SegmentedModel": "heliabuild.runner.segments",
    "build_runner": "heliabuild.runner.freeze",
    "cut_segments": "heliabuild.runner.segments",
    "load_policy": "heliabuild.runner.policy",
    "load_runner": "heliabuild.runner.freeze",
    "read_runner_record": "heliabuild.runner.record",
    "measure": "heliabuild.runner.lifecycle",
    "run_reference": "heliabuild.runner.litert",
    "run_runner": "heliabuild.runner.lifecycle",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
