"""The checks HeliaPipeline (and so HeliaSweep's points) makes while the SConscripts are read, so that a
misspelt accelerator, backend, platform or policy key stops the build before any stage runs, with a
did-you-mean and the SConstruct line (heliabuild.scons.messages.configuration_error), rather than failing
at its stage after the earlier stages ran.

- the accelerator: one of Vela's accelerator configs, restated from the MAC counts each Ethos-U has
  (heliabuild.fvp.targets.MAC_COUNTS, the same list as Vela's `Accelerator.member_list()`, which a test
  checks: importing Vela's table costs a second and a half);
- the backend: one of the registry's BACKENDS (heliabuild.runner.backends, which imports no backend);
- the platform: one of heliabuild's platform table (heliabuild.aot.shipped, read unvalidated);
- the policy's keys (heliabuild.runner.policy.scan_policy_keys: an ordinary policy file is not parsed, and
  PyYAML not imported, while the SConscripts are read). The policy's values are the runner stage's to check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.runner.backends import BACKENDS
from heliabuild.runner.policy import scan_policy_keys
from heliabuild.scons.messages import configuration_error, node_path

METHOD_NAME = "HeliaPipeline"
"""heliabuild.scons.pipeline.METHOD_NAME (this module is imported by it)."""


def accelerators() -> list[str]:
    """Vela's accelerator configs, in Vela's order (module docstring)."""
    from heliabuild.fvp.targets import MAC_COUNTS

    return [f"{npu}-{macs}" for npu, counts in MAC_COUNTS.items() for macs in counts]


def close_matches(word: str, names: Sequence[str], *, n: int, cutoff: float = 0.6) -> list[str]:
    """difflib's closest `names` to `word` (difflib is imported only for a name refused: a no-op build refuses none)."""
    import difflib

    return difflib.get_close_matches(word, names, n=n, cutoff=cutoff)


def choice_problem(keyword: str, value: object, known: Sequence[str], what: str) -> str | None:
    """Why `value` of `keyword` is refused (a string not in `known`, with a did-you-mean and the line to write),
    or None when it is one of them (or not a string: the stage checks those)."""
    if not isinstance(value, str) or value in known:
        return None
    close = close_matches(value, known, n=2)
    hint = f"; did you mean {' or '.join(f'{keyword}={match!r}' for match in close)}?" if close else ""
    return f"{keyword}={value!r} is not {what}{hint} (they are {', '.join(known)})"


def pipeline_problems(accelerator: object, backend: object, platform: object) -> list[str]:
    """The problems of a pipeline's accelerator, backend and platform (each None when not given)."""
    problems = [choice_problem("backend", backend, BACKENDS, "a heliabuild backend")]
    if accelerator is not None:
        problems.append(choice_problem("accelerator", accelerator, accelerators(), "an accelerator Vela knows"))
    if platform is not None:
        from heliabuild.aot.shipped import platform_names

        problems.append(choice_problem("platform", platform, platform_names(), "a platform of heliabuild's table"))
    return [problem for problem in problems if problem is not None]


def policy_problem(policy: object, path: str | None, shown: str = "policy") -> str | None:
    """Why the policy's keys are refused (the policy's own message, with its did-you-mean), or None. `policy`
    is the HELIA_POLICY value; `path` the policy file's path when it is a source file that exists now, which
    the message names as `shown` (heliabuild.runner.policy.scan_policy_keys)."""
    error = scan_policy_keys(policy, path, shown)
    if error is None:
        return None
    return f"{error.message}{f' (hint: {error.hint})' if error.hint else ''}"


def check_pipeline(env: Environment, name: str, backend: object, options: Mapping[str, object]) -> None:
    """Refuse, while the SConscripts are read, the accelerator, backend, platform or policy keys of the
    HeliaPipeline `name` (its construction variables `options`) that its stages would refuse (module
    docstring), with a did-you-mean and the calling line."""
    from heliabuild.scons import aot, runner, vela

    problems = pipeline_problems(options.get(vela.ACCELERATOR), backend, options.get(aot.PLATFORM))
    policy = options.get(runner.POLICY, env.get(runner.POLICY))
    path = shown = None
    if isinstance(policy, str | Node):
        node = env.File(policy)
        if not node.has_builder() and node.srcnode().exists():
            path, shown = node.srcnode().get_abspath(), node_path(node)
    problem = policy_problem(policy, path, shown or "policy")
    if problem is not None:
        problems.append(problem)
    if problems:
        raise configuration_error(METHOD_NAME, name, "; ".join(problems))
