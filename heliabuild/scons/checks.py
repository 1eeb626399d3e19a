"""The checks HeliaPipeline (and so HeliaSweep's points) makes while the SConscripts are read, so that a
misspelt accelerator, backend, platform or policy key stops the build before any stage runs, with a
did-you-mean and the SConstruct line (heliabuild.scons.messages.configuration_error), rather than failing
at its stage after the earlier stages ran.

- the accelerator: one of Vela's accelerator configs, restated from the MAC counts each Ethos-U has
  (heliabuild.fvp.targets.MAC_COUNTS, the same list as Vela's `Accelerator.member_list()`, which a test
  checks: importing Vela's table costs a second and a half);
- the backend: one of BACKENDS (heliabuild.runner.freeze.BACKENDS, restated; a test checks they agree);
- the platform: one of heliabuild's platform table (heliabuild.aot.shipped, read unvalidated);
- the policy's keys: a mapping is checked against the policy schema's keys; a file only when a word
  followed by a colon in it is no key of the policy schema (so an ordinary policy is not parsed, and PyYAML
  not imported, while the SConscripts are read), and then parsed and checked. The policy's values are the
  runner stage's to check, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError, PolicyError
from heliabuild.scons.messages import configuration_error, node_path

BACKENDS = ("litert", "qemu-m55", "fvp")
"""heliabuild.runner.freeze.BACKENDS, restated so that reading the SConscripts does not import the runner."""

METHOD_NAME = "HeliaPipeline"
"""heliabuild.scons.pipeline.METHOD_NAME (this module is imported by it)."""
_KEY_LIKE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[\"']?\s*:(?:\s|$)")
"""A word followed by a colon, quoted or not: what may be a key of a YAML or JSON policy."""
POLICY_SCHEMA = "policy"


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


@cache
def _policy_keys() -> frozenset[str]:
    """Every property name anywhere in the policy schema."""
    from heliabuild.schema_files import load_schema

    found: set[str] = set()

    def walk(schema: Any) -> None:
        if isinstance(schema, dict):
            found.update(schema.get("properties", {}))
            for value in schema.values():
                walk(value)
        elif isinstance(schema, list):
            for value in schema:
                walk(value)

    walk(load_schema(POLICY_SCHEMA))
    return frozenset(found)


def policy_problem(policy: object, path: str | None, shown: str = "policy") -> str | None:
    """Why the policy's keys are refused (the policy's own message, with its did-you-mean), or None. `policy`
    is the HELIA_POLICY value; `path` the policy file's path when it is a source file that exists now, which
    the message names as `shown`."""
    if isinstance(policy, Mapping):
        document: Any = policy
        source = "policy"
    elif path is not None:
        from heliabuild.documents import read_text

        try:
            text = read_text(path, "policy")
        except HeliaError:
            return None  # unreadable now: the runner stage says why
        if "\\" not in text and set(_KEY_LIKE.findall(text)) <= _policy_keys():
            return None
        from heliabuild.documents import parse_yaml

        try:
            document = parse_yaml(text, shown, "policy")
        except HeliaError:
            return None  # not YAML: the runner stage says why, with the policy's own message
        source = shown
    else:
        return None
    from heliabuild.runner.policy import check_policy_keys

    try:
        check_policy_keys(document, source)
    except PolicyError as error:
        return f"{error.message}{f' (hint: {error.hint})' if error.hint else ''}"
    return None


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
