"""The HeliaPipeline pseudo-builder: the stages of one model's pipeline, chained, with aliases.

    env.HeliaPipeline('kws', model, fences=[3, 6])              # fence at positions, then Vela, ...
    env.HeliaPipeline('kws_budget', model, budget_cycles=30000)  # Vela, plan-fences, fence, Vela, ...

Contract (docs/scons.md, "HeliaPipeline", is the full one):

- The stages are STAGES, in order; a pipeline has those whose `applies` holds for its request, each fed by
  the ones before it, each one builder call of heliabuild.scons (a new stage is one more row).
- `fences` (a list of operator indices, or a fence plan's path or node) and `budget_cycles` choose the
  fence stages; each keyword of KEYWORD_VARIABLES sets its construction variable for this pipeline's
  builders (None keeps the environment's); any other keyword must be an upper-case construction variable,
  and a HELIA_ variable no stage reads, or a lower-case keyword that is none of these, is refused with a
  did-you-mean (check_keywords). The accelerator, backend, platform and policy
  keys are checked while the SConscripts are read (heliabuild.scons.checks).
- `stage_dirs` (and `unfenced_dir`) put shareable stages in other folders; pipelines whose stage lands on
  one target share one builder call when its inputs are the same (heliabuild.scons.sharing).
- Adds the aliases `<name>`, `<name>-<stage>` and `fenced_model`, registers the run stage's row of the
  summary table (heliabuild.scons.summary), and returns a Pipeline: each stage's nodes by name.
- A call that cannot work is a UserError naming the SConscript line.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from types import MappingProxyType

import SCons.Node.Alias
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.aot.prefix import prefix_of
from heliabuild.scons import aot, fence, fence_plan, firmware, fvp, runner, sharing, summary, vela
from heliabuild.scons.checks import check_pipeline, close_matches
from heliabuild.scons.messages import configuration_error, node_path
from heliabuild.scons.sharing import VARIABLE_PREFIX
from heliabuild.targets import table

METHOD_NAME = "HeliaPipeline"
DEFAULT_BUILD_FOLDER = "build"
"""A pipeline's default build_dir is `build/<name>`, and a sweep's `build/<sweep>` (beside the SConstruct,
not the top folder itself)."""
FENCED_MODEL_ALIAS = "fenced_model"
UNFENCED_FOLDER = "unfenced"
FENCED_SUFFIX = "_fenced.tflite"
RUNNER_FOLDER = "runner"
RESULTS_FOLDER = "results"
FIRMWARE_FOLDER = "firmware"
QEMU_BACKEND = "qemu-m55"
QEMU_PLATFORM = table().qemu_machine().name
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
"""What a pipeline name (or a sweep's) may be: it names aliases and folders."""

Fences = tuple[int, ...] | Node | None


@dataclass(frozen=True)
class PipelineRequest:
    """What one HeliaPipeline call asks for, checked and resolved to nodes."""

    name: str
    model: Node
    fences: Fences
    budget_cycles: int | None
    build_dir: Node
    overrides: Mapping[str, object]
    prefix: str = ""
    backend: str = "litert"
    unfenced_dir: Node | None = None
    stem: str = ""
    stage_dirs: Mapping[str, Node] = field(default_factory=lambda: MappingProxyType({}))


Built = Mapping[str, list[Node]]
"""The nodes of the stages built so far, by stage name."""


@dataclass(frozen=True)
class Stage:
    """A row of STAGES: whether a pipeline has the stage, and how to call its builder."""

    name: str
    applies: Callable[[PipelineRequest], bool]
    build: Callable[[Environment, PipelineRequest, Built], list[Node]]


@dataclass(frozen=True)
class Pipeline:
    """What HeliaPipeline returns: the nodes of each stage it has, in stage order, and its alias.

    `pipeline['vela']` is the list of a stage's nodes (its builder's
    targets, in the builder's order); `'fence' in pipeline` says whether it
    has the stage.
    """

    name: str
    stages: Mapping[str, tuple[Node, ...]]
    alias: Node

    def __getitem__(self, stage: str) -> list[Node]:
        return list(self.stages[stage])

    def __contains__(self, stage: object) -> bool:
        return stage in self.stages

    def __iter__(self) -> Iterator[str]:
        return iter(self.stages)

    @property
    def nodes(self) -> list[Node]:
        """Every node of every stage, in stage order."""
        return [node for nodes in self.stages.values() for node in nodes]

    @property
    def fenced_model(self) -> Node | None:
        """The fenced model, or None for a pipeline without a fence stage."""
        return self.stages["fence"][0] if "fence" in self.stages else None

    @property
    def vela_model(self) -> Node:
        """The model Vela compiled (the `vela` stage's first target)."""
        return self.stages["vela"][0]

    @property
    def aot_plan(self) -> Node:
        """The AOT plan, `<prefix>_plan.json` (the `aot-plan` stage's first target; the report is second)."""
        return self.stages["aot-plan"][0]

    @property
    def runner(self) -> Node:
        """The runner's `runner.json` (the `runner` stage's first target)."""
        return self.stages["runner"][0]

    @property
    def result(self) -> Node:
        """The bundle's `result.json` (the `run` stage's first target); its folder is the bundle."""
        return self.stages["run"][0]


def _has_budget(request: PipelineRequest) -> bool:
    return request.budget_cycles is not None


def _has_fences(request: PipelineRequest) -> bool:
    return request.fences is not None or request.budget_cycles is not None


def _always(request: PipelineRequest) -> bool:
    return True


def _on_qemu(request: PipelineRequest) -> bool:
    return request.backend == QEMU_BACKEND


def _stage_dir(request: PipelineRequest, stage: str) -> Node:
    """The folder of a stage's outputs: its entry in stage_dirs, else the pipeline's build_dir."""
    return request.stage_dirs.get(stage, request.build_dir)


def _once(
    env: Environment,
    request: PipelineRequest,
    stage: str,
    builder: str,
    target: Node,
    sources: list[Node],
    **variables: object,
) -> list[Node]:
    """The builder's call for a shareable stage, or the targets of the pipeline that made `target` from the
    same inputs (heliabuild.scons.sharing.once)."""
    return sharing.once(
        env, METHOD_NAME, request.name, stage, builder, target, sources, {**request.overrides, **variables}
    )


def _vela_unfenced(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    folder = request.stage_dirs.get("vela-unfenced", request.unfenced_dir or request.build_dir.Dir(UNFENCED_FOLDER))
    compiled = folder.File(vela.vela_target_name(request.model.name))
    return _once(env, request, "vela-unfenced", "HeliaVela", compiled, [request.model])


def _plan_fences(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    target = _stage_dir(request, "plan-fences").File(f"{request.stem}{fence_plan.TARGET_SUFFIX}")
    sources = [request.model, built["vela-unfenced"][1]]
    return _once(
        env,
        request,
        "plan-fences",
        "HeliaFencePlan",
        target,
        sources,
        **{fence_plan.BUDGET_CYCLES: request.budget_cycles},
    )


def _fence(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    target = _stage_dir(request, "fence").File(f"{request.stem}{FENCED_SUFFIX}")
    fence_plan = built["plan-fences"][0] if "plan-fences" in built else request.fences
    if isinstance(fence_plan, Node):
        return _once(env, request, "fence", "HeliaFence", target, [request.model, fence_plan], **{fence.FENCES: []})
    return _once(env, request, "fence", "HeliaFence", target, [request.model], **{fence.FENCES: list(fence_plan or ())})


def _vela(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    model = built["fence"][0] if "fence" in built else request.model
    target = _stage_dir(request, "vela").File(vela.vela_target_name(model.name))
    targets = _once(env, request, "vela", "HeliaVela", target, [model])
    if "fence" in built:  # the scanner finds the sidecar too; explicit, it survives --implicit-deps-unchanged
        env.Depends(targets, built["fence"][1])
    return targets


def _model_to_run(request: PipelineRequest, built: Built) -> Node:
    """The model the runner runs: the fenced model, or the model itself without a fence stage."""
    return built["fence"][0] if "fence" in built else request.model


def _aot_plan(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    target = _stage_dir(request, "aot-plan").File(f"{request.prefix}{aot.AOT_PLAN_SUFFIX}")
    # on qemu-m55 the firmware runs every operator on the CPU: the plan of the model itself
    sources = [_model_to_run(request, built)] if _on_qemu(request) else [built["vela"][0], built["vela"][1]]
    return _once(env, request, "aot-plan", "HeliaAotPlan", target, sources)


def _firmware(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    target = _stage_dir(request, "firmware").Dir(FIRMWARE_FOLDER).File(f"{request.prefix}_model.c")
    sources = [_model_to_run(request, built), built["aot-plan"][0]]
    return _once(env, request, "firmware", "HeliaFirmwareModule", target, sources)


def _runner(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    fenced = "fence" in built
    sources = [built["fence"][0], built["fence"][1]] if fenced else [request.model]
    sources += [built["vela"][0], built["vela"][3], built["aot-plan"][0]]
    if "firmware" in built:
        sources.append(built["firmware"][0])
    target = request.build_dir.Dir(RUNNER_FOLDER).Dir(request.name).File(runner.RUNNER_FILE)
    return env.HeliaRunner(target, sources, **request.overrides)


def _run(env: Environment, request: PipelineRequest, built: Built) -> list[Node]:
    target = request.build_dir.Dir(RESULTS_FOLDER).Dir(request.name).File(runner.RESULT_FILE)
    return env.HeliaRun(target, built["runner"][0], **request.overrides)


STAGES: tuple[Stage, ...] = (
    Stage("vela-unfenced", _has_budget, _vela_unfenced),
    Stage("plan-fences", _has_budget, _plan_fences),
    Stage("fence", _has_fences, _fence),
    Stage("vela", _always, _vela),
    Stage("aot-plan", _always, _aot_plan),
    Stage("firmware", _on_qemu, _firmware),
    Stage("runner", _always, _runner),
    Stage("run", _always, _run),
)
"""Every stage a pipeline can have, in build order."""

KEYWORD_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "accelerator": vela.ACCELERATOR,
        "system_config": vela.SYSTEM_CONFIG,
        "memory_mode": vela.MEMORY_MODE,
        "vela_config": vela.CONFIG,
        "min_coverage": fence_plan.MIN_COVERAGE,
        "platform": aot.PLATFORM,
        "prefix": aot.PREFIX,
        "aot_config": aot.CONFIG,
        "policy": runner.POLICY,
        "backend": runner.BACKEND,
        "fvp_firmware": runner.FVP_FIRMWARE,
    }
)
"""The HeliaPipeline keywords that set one construction variable each, and the variable."""

_RESERVED = (fence.FENCES, fence_plan.BUDGET_CYCLES)
"""Variables a pipeline sets from its own arguments; passing them as keywords is refused."""


def _model_node(env: Environment, name: str, model: object) -> Node:
    items = env.Flatten([model])
    if len(items) != 1 or not isinstance(items[0], str | Node):
        raise configuration_error(METHOD_NAME, name, f"model is {model!r}; expected one .tflite path or node")
    return env.File(items[0])


_FENCE_LIST = re.compile(r"\s*\d+(\s*,\s*\d+)*\s*,?\s*")
"""A string of operator indices (`"9,20"`): meant as the list fences=[9, 20]."""


def _fences(env: Environment, name: str, fences: object) -> Fences:
    if fences is None:
        return None
    if isinstance(fences, list | tuple):
        if not fences or not all(isinstance(f, int) and not isinstance(f, bool) for f in fences):
            raise configuration_error(
                METHOD_NAME, name, f"fences is {fences!r}; expected a non-empty list of operator indices, e.g. [3, 6]"
            )
        return tuple(fences)
    if isinstance(fences, str | Node):
        plan_node = env.File(fences)
        if not plan_node.name.endswith(fence.FENCE_PLAN_SUFFIX):
            listed = _FENCE_LIST.fullmatch(fences) if isinstance(fences, str) else None
            give = f"; give a list: fences=[{', '.join(listed[0].replace(',', ' ').split())}]" if listed else ""
            raise configuration_error(
                METHOD_NAME, name, f"fences is {node_path(plan_node)}; a fence plan is a .json{give}"
            )
        return plan_node
    raise configuration_error(
        METHOD_NAME, name, f"fences is {fences!r}; expected a list of operator indices or a fence-plan .json path"
    )


def _request(
    env: Environment,
    name: object,
    model: object,
    fences: object,
    budget_cycles: object,
    build_dir: object,
    overrides: dict[str, object],
    prefix: str = "",
) -> PipelineRequest:
    """Check a HeliaPipeline call and resolve its arguments to nodes; UserError for a call that cannot work."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise configuration_error(
            METHOD_NAME, str(name), "a pipeline name is letters, digits, '_', '.', '+' and '-' (it names aliases)"
        )
    existing = SCons.Node.Alias.default_ans.lookup(name)
    if existing is not None and existing.sources:
        raise configuration_error(METHOD_NAME, name, f"the alias {name!r} exists already; give each pipeline its name")
    reserved = sorted(set(overrides) & set(_RESERVED))
    if reserved:
        raise configuration_error(
            METHOD_NAME, name, f"{', '.join(reserved)} cannot be given to a pipeline: use fences= or budget_cycles="
        )
    if fences is not None and budget_cycles is not None:
        raise configuration_error(METHOD_NAME, name, "give fences or budget_cycles, not both")
    if budget_cycles is not None and (
        isinstance(budget_cycles, bool) or not isinstance(budget_cycles, int) or budget_cycles <= 0
    ):
        raise configuration_error(
            METHOD_NAME, name, f"budget_cycles is {budget_cycles!r}; expected a positive number of cycles"
        )
    return PipelineRequest(
        name=name,
        model=_model_node(env, name, model),
        fences=_fences(env, name, fences),
        budget_cycles=budget_cycles,
        build_dir=env.Dir(build_dir),
        overrides=MappingProxyType(dict(overrides)),
        prefix=prefix,
    )


def _stage_dirs(env: Environment, name: str, stage_dirs: Mapping[str, object] | None) -> Mapping[str, Node]:
    """stage_dirs as folder nodes; a UserError for a key that is no stage pipelines can share (sharing.SHAREABLE)."""
    if stage_dirs is None:
        return MappingProxyType({})
    if not isinstance(stage_dirs, Mapping) or not all(key in sharing.SHAREABLE for key in stage_dirs):
        raise configuration_error(
            METHOD_NAME,
            name,
            f"stage_dirs is {stage_dirs!r}; expected a mapping of {', '.join(sharing.SHAREABLE)} to folders",
        )
    return MappingProxyType({stage: env.Dir(folder) for stage, folder in stage_dirs.items()})


def check_keywords(
    name: str, overrides: Mapping[str, object], method: str = METHOD_NAME, what: str = "keyword"
) -> None:
    """Refuse a keyword that is neither a HeliaPipeline argument nor a construction variable (upper case),
    such as `config=`, and a `HELIA_` variable heliabuild does not know (`HELIA_VELA_OPTIMIZE=`, which no
    stage would read), each with the closest names as a did-you-mean. Other upper-case variables are the
    user's own and pass through. The UserError is of `method` `name`, calling the keyword a `what`."""
    for keyword in sorted(overrides):
        if keyword.startswith(VARIABLE_PREFIX) and keyword not in _helia_variables():
            close = close_matches(keyword, _helia_variables(), n=2, cutoff=0.85)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise configuration_error(
                method,
                name,
                f"unknown construction variable {keyword}={overrides[keyword]!r}{hint} (no heliabuild stage reads "
                "it; docs/scons.md lists the HELIA_ variables)",
            )
        if keyword != keyword.upper() and keyword not in _keywords():
            close = close_matches(keyword, _keywords(), n=3)
            hint = f"; did you mean {' or '.join(f'{match}=' for match in close)}?" if close else ""
            raise configuration_error(
                method,
                name,
                f"unknown {what} {keyword}={overrides[keyword]!r}{hint} "
                f"(the keywords are {', '.join(_keywords())}; a construction variable is upper case)",
            )


@cache
def _helia_variables() -> tuple[str, ...]:
    """Every construction variable a heliabuild stage reads: the HELIA_ names its builder modules define."""
    modules = (aot, fence, fence_plan, firmware, fvp, runner, vela)
    return tuple(
        sorted(
            {
                value
                for module in modules
                for constant, value in vars(module).items()
                if constant.isupper() and isinstance(value, str) and value.startswith(VARIABLE_PREFIX)
            }
        )
    )


@cache
def _keywords() -> tuple[str, ...]:
    """The keyword arguments of helia_pipeline (after `env`), in order."""
    parameters = list(inspect.signature(helia_pipeline).parameters.values())[1:]
    return tuple(p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD)


def helia_pipeline(
    env: Environment,
    name: str,
    model: object,
    fences: object = None,
    budget_cycles: int | None = None,
    accelerator: str | None = None,
    system_config: str | None = None,
    memory_mode: str | None = None,
    min_coverage: float | None = None,
    build_dir: object = None,
    platform: str | None = None,
    prefix: str | None = None,
    aot_config: object = None,
    policy: object = None,
    backend: str | None = None,
    vela_config: object = None,
    unfenced_dir: object = None,
    fvp_firmware: str | None = None,
    stem: str | None = None,
    stage_dirs: Mapping[str, object] | None = None,
    **overrides: object,
) -> Pipeline:
    """Chain the stages of STAGES that apply into targets under `build_dir`; see the module docstring.

    `build_dir` (default `build/<name>`) is relative to the calling SConscript's folder (under a
    variant dir, its build folder). A keyword that is not upper case and not
    one of these is a UserError (see check_keywords).
    """
    check_keywords(str(name), overrides)
    arguments = locals()
    options = {variable: arguments[keyword] for keyword, variable in KEYWORD_VARIABLES.items()}
    given = {key: value for key, value in options.items() if value is not None}
    twice = sorted(set(given) & set(overrides))
    if twice:
        raise configuration_error(
            METHOD_NAME, str(name), f"{', '.join(twice)} given both as an argument and as a construction variable"
        )
    file_stem = str(name) if stem is None else stem
    if not isinstance(file_stem, str) or not NAME_PATTERN.fullmatch(file_stem):
        raise configuration_error(
            METHOD_NAME, str(name), f"stem is {file_stem!r}; a file stem is letters, digits, '_', '.', '+' and '-'"
        )
    folders = _stage_dirs(env, str(name), stage_dirs)
    module_prefix = given.get(aot.PREFIX, overrides.get(aot.PREFIX))
    if module_prefix is None:
        module_prefix = prefix_of(file_stem)
    elif not isinstance(module_prefix, str) or not aot.is_c_identifier(module_prefix):
        raise configuration_error(
            METHOD_NAME, str(name), f"prefix is {module_prefix!r}; a module prefix is a C identifier, e.g. 'kws'"
        )
    given[aot.PREFIX] = module_prefix
    chosen_backend = given.get(runner.BACKEND, overrides.get(runner.BACKEND, env.get(runner.BACKEND)))
    check_pipeline(env, str(name), chosen_backend, {**overrides, **given})
    if chosen_backend == QEMU_BACKEND:
        chosen_platform = given.get(aot.PLATFORM, overrides.get(aot.PLATFORM))
        if chosen_platform not in (None, QEMU_PLATFORM):
            raise configuration_error(
                METHOD_NAME,
                str(name),
                f"backend {QEMU_BACKEND} runs on platform {QEMU_PLATFORM}, and platform {chosen_platform!r} was given",
            )
        given[aot.PLATFORM] = QEMU_PLATFORM
        given[firmware.PREFIX] = module_prefix
    elif aot.PLATFORM not in given and aot.PLATFORM not in overrides and env.get(aot.PLATFORM) == aot.DEFAULT_PLATFORM:
        from heliabuild.aot.shipped import default_platform

        accelerator_name = given.get(vela.ACCELERATOR, overrides.get(vela.ACCELERATOR, env.get(vela.ACCELERATOR)))
        given[aot.PLATFORM] = default_platform(None if accelerator_name is None else str(accelerator_name))
    folder = f"{DEFAULT_BUILD_FOLDER}/{name}" if build_dir is None else build_dir
    request = _request(env, name, model, fences, budget_cycles, folder, {**overrides, **given}, module_prefix)
    request = replace(
        request,
        backend=str(chosen_backend),
        unfenced_dir=None if unfenced_dir is None else env.Dir(unfenced_dir),
        stem=file_stem,
        stage_dirs=folders,
    )
    built: dict[str, list[Node]] = {}
    for stage in STAGES:
        if stage.applies(request):
            built[stage.name] = list(stage.build(env, request, built))
    checks: list[Node] = []
    if _on_qemu(request):
        # The module generator's refusal before the first stage runs, not after fence and aot-plan.
        checks = env.HeliaModuleAdmission(request.build_dir.File(f"{name}{firmware.ADMISSION_SUFFIX}"), request.model)
        env.Requires(next(iter(built.values())), checks)
    for stage_name, nodes in built.items():
        env.Alias(f"{name}-{stage_name}", nodes)
    alias = env.Alias(name, [*checks, *(node for nodes in built.values() for node in nodes)])[0]
    if "fence" in built:
        env.Alias(FENCED_MODEL_ALIAS, built["fence"])
    summary.register(name, built["run"][0])
    return Pipeline(
        name=name,
        stages=MappingProxyType({stage: tuple(nodes) for stage, nodes in built.items()}),
        alias=alias,
    )
