#!/usr/bin/env python3
"""Benchmark: every row of issue 13's table, side by side in one run, as CPU-time ratios of interleaved pairs.

Each figure is the CPU time (user + system) of a whole process and every child it waited for (os.wait4), not
wall time: the machine is shared, and CPU time is what another job's load does not stretch. Each row is a set
of interleaved pairs (the order within a pair alternates), reported as min/median/max of the per-pair ratios.

Rows:

- no-op: `scons` with nothing to do over N pipelines of HeliaPipeline(fences=[3, 6], policy=policy.yaml)
  (fence -> vela -> aot-plan -> runner -> run) on synthetic chain models, against plain SCons `Command`
  chains with the same graph: the baseline SConstruct is made from a dump of heliabuild's graph (every
  builder call's targets and sources, its explicit and scanned dependencies as explicit Depends, the same
  Value nodes, Precious/NoCache, every alias) and its own dump must equal it. Its commands run the same
  tools as command lines (`heliabuild fence`, `heliabuild vela`, `heliabuild aot-plan`, `heliabuild runner`,
  `heliabuild run`), as a plain SCons project would.
- one input changed: one pipeline's model replaced (alternately by two chain models), each side rebuilding
  that pipeline's five stages, checked from what each printed.
- peak memory: the largest resident set (ru_maxrss) of the changed-input builds at the largest N.
- vela: `heliabuild vela MODEL -o DIR` against bare `vela MODEL --output-dir DIR` with the options heliabuild
  passes (heliabuild.vela.VelaOptions.arguments), on small models.
- aot-plan: `heliabuild aot-plan` of the large synthetic model (about 1,000 operators, 50 MB) for
  apollo510_evb with every constant in PSRAM streamed through a 256 KiB DTCM pool, against a process that only
  loads the model (heliabuild.model.load_model), both whole processes.

Only two pipelines are built for real. Every other pipeline is made by copying their outputs (the pipeline's
name replaced in the JSON and CSV files), and the copies are checked byte for byte against the real second
pipeline first; the copying changes only the function each action calls, so SCons's database records the
real action signatures (bench/graph_hooks.py). The runner stage is built for real in every pipeline (its
runner.json holds hashes of files that name the pipeline).

Targets: no-op <= 1.10x at every N, changed input <= 0.6x at every N, vela <= 1.15x, aot-plan <= 2.5x.

    python bench/speed.py [--sizes 10,50,200,1000] [--pairs 5] [--rows noop,changed,vela,aot]
    python bench/speed.py --quick          # two pipelines, one pair per row, a small model for aot-plan

Set PYTHONPATH to measure another heliabuild (the scons, heliabuild and vela processes import it from there).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from measure import ProcessCost, Ratios, process_cost, ratios

from heliabuild.model import save_model
from heliabuild.synth import synthesize

REPO = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
TEMPLATE, CHECKED = "p0000", "p0001"
STAGE_LINES = (
    "heliabuild: fence ",
    "heliabuild: vela ",
    "heliabuild: aot-plan ",
    "heliabuild: runner ",
    "heliabuild: run ",
)
TARGETS = {"noop": 1.10, "changed": 0.6, "vela": 1.15, "aot": 2.5}
POLICY = "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 1}\n"

HELIA_SCONSTRUCT = """\
SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=["site_scons/site_tools"])
for index in range({pipelines}):
    name = f"p{{index:04d}}"
    env.HeliaPipeline(name, f"{{name}}/model.tflite", fences=[3, 6], build_dir=name, policy="policy.yaml")
if "bench_hooks" in ARGUMENTS:
    import sys
    sys.path.insert(0, ARGUMENTS["bench_hooks"])
    import graph_hooks
    if "bench_dump" in ARGUMENTS:
        graph_hooks.dump_graph(env, ARGUMENTS["bench_dump"])
        Exit(0)
    graph_hooks.copy_heliabuild_stages(env, "{template}", real=["HeliaRunner"], folders=["HeliaRun"])
"""

COMMANDS = {
    "HeliaFence": "heliabuild fence ${{SOURCES[0]}} --after-ops 3,6 -o ${{TARGETS[0]}}",
    "HeliaVela": "heliabuild vela ${{SOURCES[0]}} -o ${{TARGET.dir}}",
    "HeliaAotPlan": "heliabuild aot-plan ${{SOURCES[0]}} --vela-per-layer ${{SOURCES[1]}} --prefix {name} "
    "--platform corstone300_ethos_u55 -o ${{TARGET.dir}}",
    "HeliaRunner": "heliabuild runner --model ${{SOURCES[0]}} --sidecar ${{SOURCES[1]}} --vela-model ${{SOURCES[2]}} "
    "--segments ${{SOURCES[3]}} --aot-plan ${{SOURCES[4]}} --policy policy.yaml -o ${{TARGET.dir}}",
    "HeliaRun": "rm -rf ${{TARGET.dir}}.previous && heliabuild run ${{SOURCES[0]}} -o ${{TARGET.dir}}",
}
"""The command line a plain SCons project runs for each heliabuild builder ({name}: the pipeline)."""

BASELINE_SCONSTRUCT = """\
import os
SetOption("hash_format", "sha256")
env = Environment(tools=[], ENV={{k: os.environ[k] for k in ("PATH", "PYTHONPATH", "HOME") if k in os.environ}})
env["IMPLICIT_COMMAND_DEPENDENCIES"] = 0  # no executable nodes: the graph is heliabuild's, node for node
CALLS = {calls!r}
ALIASES = {aliases!r}
copy = None
if "bench_hooks" in ARGUMENTS:
    import sys
    sys.path.insert(0, ARGUMENTS["bench_hooks"])
    import graph_hooks
    if "bench_origin" in ARGUMENTS:
        copy = graph_hooks.CopyCommand


VALUES = {{}}


def node(kind, text, name):
    if kind == "value":  # a Value node is made once, as heliabuild's builders make theirs
        if text not in VALUES:
            VALUES[text] = env.Value(text.format(name=name))
        return VALUES[text] if "{{name}}" not in text else env.Value(text.format(name=name))
    return env.Alias(text.format(name=name))[0] if kind == "alias" else text.format(name=name)


for index in range({pipelines}):
    name = f"p{{index:04d}}"
    for command, targets, sources, depends, flags in CALLS:
        command = command.format(name=name)
        targets = [t.format(name=name) for t in targets]
        action = command if copy is None else copy(command, ARGUMENTS["bench_origin"], "heliabuild run" in command)
        built = env.Command(targets, [s.format(name=name) for s in sources], action)
        if all(nodes == depends[0] for nodes in depends):  # one Depends for the call, as the builders do
            env.Depends(built, [node(kind, text, name) for kind, text in depends[0]])
        else:
            for target, nodes in zip(built, depends):
                env.Depends(target, [node(kind, text, name) for kind, text in nodes])
        for target, (precious, nocache, noclean) in zip(built, flags):
            if precious:
                env.Precious(target)
            if nocache:
                env.NoCache(target)
    for alias, nodes in ALIASES:
        env.Alias(alias.format(name=name), [node(kind, text, name) for kind, text in nodes])
if "bench_dump" in ARGUMENTS:
    graph_hooks.dump_graph(env, ARGUMENTS["bench_dump"])
    Exit(0)
"""


def environment() -> dict[str, str]:
    """The environment of every measured process: this venv's tools first on PATH, no SCONSFLAGS, and
    bytecode cached as an installed package has it (without, heliabuild's modules, unlike SCons's installed
    ones, would be compiled again by every process)."""
    dropped = ("SCONSFLAGS", "PYTHONDONTWRITEBYTECODE")
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def scons(project: Path, *arguments: str) -> ProcessCost:
    cost = process_cost([str(BIN / "scons"), "-Q", *arguments], project, environment())
    if cost.returncode != 0:
        sys.exit(f"speed: scons {' '.join(arguments)} failed in {project}:\n{cost.output[-4000:]}")
    return cost


def checked(cost: ProcessCost, what: str, expected: int, marker: Callable[[str], bool]) -> ProcessCost:
    """`cost`, after checking that its output has `expected` lines for which `marker` holds."""
    lines = [line for line in cost.output.splitlines() if marker(line)]
    if len(lines) != expected:
        sys.exit(f"speed: {what}: expected {expected} stage lines, got {len(lines)}:\n{cost.output[-4000:]}")
    return cost


_PROGRESS = re.compile(r"heliabuild: \[\d+/\d+\] ")
"""The `[k/n] ` the SCons stage lines carry after `heliabuild: ` (heliabuild.scons.progress)."""


def _helia_stage(line: str) -> bool:
    """A stage's start line, `heliabuild: [k/n] fence ...` (its `...: done in` line is not counted)."""
    bare = _PROGRESS.sub("heliabuild: ", line, count=1)
    return bare.startswith(STAGE_LINES) and ": done in " not in bare


def _baseline_stage(line: str) -> bool:
    return line.startswith(("heliabuild ", "rm -rf "))


def _normal(dump: dict, merge_scanned: bool) -> tuple[list, list]:
    calls = []
    for call in dump["calls"]:
        depends = []
        for nodes in call["depends"]:
            names = {tuple(n) for n in nodes}
            if merge_scanned:
                names |= {("file", s) for s in call["scanned"]}
            depends.append(sorted(names))
        calls.append((call["targets"], call["sources"], depends, call["flags"]))
    return sorted(calls), sorted(dump["aliases"].items())


def baseline_sconstruct(dump: dict, pipelines: int) -> str:
    """A plain-Command SConstruct with the graph of `dump`, from its first pipeline's calls and aliases."""

    def template(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}").replace(TEMPLATE, "{name}")

    def nodes(items: list) -> list:
        return [(kind, template(text)) for kind, text in items]

    calls = []
    for call in dump["calls"]:
        if not call["targets"][0].startswith(f"{TEMPLATE}/"):
            continue
        merged = [
            sorted({tuple(n) for n in nodes(d)} | {("file", template(s)) for s in call["scanned"]})
            for d in call["depends"]
        ]
        calls.append(
            (
                COMMANDS[call["builder"]],
                [template(t) for t in call["targets"]],
                [template(s) for s in call["sources"]],
                merged,
                call["flags"],
            )
        )
    aliases = []
    for name, items in dump["aliases"].items():
        mine = [item for item in items if TEMPLATE in item[1]]
        if mine:
            aliases.append((template(name), nodes(mine)))
    return BASELINE_SCONSTRUCT.format(calls=calls, aliases=aliases, pipelines=pipelines)


class Projects:
    """A heliabuild project and its plain-SCons twin, both with N built pipelines."""

    def __init__(self, root: Path, pipelines: int, models: tuple[Path, Path]) -> None:
        self.pipelines = pipelines
        self.models = models
        self.helia = root / "helia"
        self.baseline = root / "baseline"
        self.changed = f"p{pipelines // 2:04d}"
        self.flips = 0
        self._make(root)

    def _lay_out(self, project: Path) -> None:
        project.mkdir(parents=True)
        (project / "policy.yaml").write_text(POLICY, encoding="utf-8")
        for index in range(self.pipelines):
            folder = project / f"p{index:04d}"
            folder.mkdir()
            shutil.copyfile(self.models[0], folder / "model.tflite")

    def _make(self, root: Path) -> None:
        if self.pipelines < 2:
            sys.exit("speed: at least two pipelines (the template and the one its copies are checked against)")
        hooks = f"bench_hooks={BENCH}"
        self._lay_out(self.helia)
        shutil.copytree(REPO / "site_scons", self.helia / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
        sconstruct = HELIA_SCONSTRUCT.format(pipelines=self.pipelines, template=TEMPLATE)
        (self.helia / "SConstruct").write_text(sconstruct, encoding="utf-8")
        scons(self.helia, "-j2", TEMPLATE, CHECKED)
        self._check_copies()
        scons(self.helia, "-j2", hooks)
        dump_path = root / "helia_graph.json"
        scons(self.helia, hooks, f"bench_dump={dump_path}")
        dump = json.loads(dump_path.read_text(encoding="utf-8"))

        self._lay_out(self.baseline)
        (self.baseline / "SConstruct").write_text(baseline_sconstruct(dump, self.pipelines), encoding="utf-8")
        scons(self.baseline, "-j2", hooks, f"bench_origin={self.helia}")
        baseline_dump = root / "baseline_graph.json"
        scons(self.baseline, hooks, f"bench_dump={baseline_dump}")
        mine = json.loads(baseline_dump.read_text(encoding="utf-8"))
        if _normal(dump, merge_scanned=True) != _normal(mine, merge_scanned=False):
            sys.exit("speed: the baseline's graph is not heliabuild's")
        self.nodes = sum(len(c["targets"]) for c in dump["calls"])
        self.no_op_helia()
        self.no_op_baseline()

    def _check_copies(self) -> None:
        """The copies of the template pipeline (its name replaced) are byte for byte the real second one's,
        for every stage that is copied (the run's bundle holds measurements, which differ run to run)."""
        for path in sorted((self.helia / CHECKED).glob("*")):
            if not path.is_file() or path.name == "model.tflite":
                continue
            copy = (self.helia / TEMPLATE / path.name.replace(CHECKED, TEMPLATE)).read_bytes()
            if path.suffix in (".json", ".csv"):
                copy = copy.replace(TEMPLATE.encode(), CHECKED.encode())
            if copy != path.read_bytes():
                sys.exit(f"speed: a copy of {TEMPLATE} is not what the real build of {path} wrote")

    def no_op_helia(self) -> ProcessCost:
        return checked(scons(self.helia), "heliabuild no-op", 0, _helia_stage)

    def no_op_baseline(self) -> ProcessCost:
        return checked(scons(self.baseline), "baseline no-op", 0, _baseline_stage)

    def flip(self) -> None:
        """Give the changed pipeline the other model, in both projects."""
        self.flips += 1
        model = self.models[self.flips % 2]
        for project in (self.helia, self.baseline):
            shutil.copyfile(model, project / self.changed / "model.tflite")

    def changed_helia(self) -> ProcessCost:
        return checked(scons(self.helia), "heliabuild changed input", len(STAGE_LINES), _helia_stage)

    def changed_baseline(self) -> ProcessCost:
        return checked(scons(self.baseline), "baseline changed input", len(STAGE_LINES), _baseline_stage)


def paired(
    pairs: int,
    measured: Callable[[], ProcessCost],
    baseline: Callable[[], ProcessCost],
    before: Callable[[], None] | None = None,
) -> tuple[Ratios, list[tuple[ProcessCost, ProcessCost]]]:
    """`pairs` interleaved pairs of (measured, baseline), the order within a pair alternating."""
    costs = []
    for index in range(pairs):
        if before is not None:
            before()
        if index % 2:
            second = baseline()
            first = measured()
        else:
            first = measured()
            second = baseline()
        costs.append((first, second))
    return ratios([(a.cpu_s, b.cpu_s) for a, b in costs]), costs


def row(label: str, figures: Ratios, target: float, unit: str = "CPU s") -> str:
    verdict = "meets" if figures.median <= target else "MISSES"
    return (
        f"{label:<34} {figures}   ({figures.numerator:7.3f} vs {figures.denominator:7.3f} {unit}; "
        f"target <= {target}x: {verdict})"
    )


def build_rows(sizes: list[int], pairs: int, rows: set[str], root: Path, models: tuple[Path, Path]) -> None:
    for size in sizes:
        projects = Projects(root / f"n{size}", size, models)
        print(f"N={size}: {projects.nodes} heliabuild targets in {len(STAGE_LINES)} stages per pipeline", flush=True)
        if "noop" in rows:
            figures, _ = paired(pairs, projects.no_op_helia, projects.no_op_baseline)
            print(row(f"  no-op, N={size}", figures, TARGETS["noop"]), flush=True)
        if "changed" in rows or ("memory" in rows and size == max(sizes)):
            figures, costs = paired(pairs, projects.changed_helia, projects.changed_baseline, projects.flip)
            print(row(f"  one input changed, N={size}", figures, TARGETS["changed"]), flush=True)
            if size == max(sizes):
                memory = ratios([(a.max_rss_kib, b.max_rss_kib) for a, b in costs])
                print(
                    f"  peak memory, changed input, N={size}: heliabuild {memory.numerator / 1024:.0f} MiB, "
                    f"plain SCons {memory.denominator / 1024:.0f} MiB ({memory})",
                    flush=True,
                )
        shutil.rmtree(root / f"n{size}")


def vela_row(pairs: int, root: Path, models: list[Path]) -> None:
    from heliabuild.vela import VelaOptions

    arguments = VelaOptions().arguments()
    env = environment()
    out_helia, out_vela = root / "vela_helia", root / "vela_bare"
    for model in models:

        def helia(model: Path = model) -> ProcessCost:
            shutil.rmtree(out_helia, ignore_errors=True)
            return process_cost([str(BIN / "heliabuild"), "vela", str(model), "-o", str(out_helia)], root, env)

        def bare(model: Path = model) -> ProcessCost:
            shutil.rmtree(out_vela, ignore_errors=True)
            return process_cost([str(BIN / "vela"), str(model), "--output-dir", str(out_vela), *arguments], root, env)

        figures, costs = paired(pairs, helia, bare)
        for a, b in costs:
            if a.returncode or b.returncode:
                sys.exit(f"speed: vela failed:\n{a.output[-2000:]}\n{b.output[-2000:]}")
        print(row(f"vela, {model.name}", figures, TARGETS["vela"]), flush=True)


def aot_row(pairs: int, root: Path, quick: bool) -> None:
    model = root / ("aot_model.tflite")
    save_model(synthesize("chain" if quick else "large", seed=0), model)
    config = root / "aot.json"
    rules = {"tensors": [{"pattern": "*", "residency": "stream", "memory": "PSRAM"}]}
    config.write_text(json.dumps({"memory": {**rules, "stream_pool": {"memory": "DTCM", "bytes": 256 * 1024}}}))
    env = environment()
    out = root / "aot_out"
    load = f"from heliabuild.model import load_model; load_model({str(model)!r})"

    def helia() -> ProcessCost:
        shutil.rmtree(out, ignore_errors=True)
        command = [str(BIN / "heliabuild"), "aot-plan", str(model), "--platform", "apollo510_evb"]
        return process_cost([*command, "--config", str(config), "--prefix", "large", "-o", str(out)], root, env)

    def bare() -> ProcessCost:
        return process_cost([sys.executable, "-c", load], root, env)

    figures, costs = paired(pairs, helia, bare)
    for a, b in costs:
        if a.returncode or b.returncode:
            sys.exit(f"speed: aot-plan failed:\n{a.output[-2000:]}\n{b.output[-2000:]}")
    what = "chain model (quick)" if quick else f"large model, {model.stat().st_size / 1e6:.1f} MB"
    print(row(f"aot-plan / load, {what}", figures, TARGETS["aot"]), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,200,1000", help="numbers of pipelines, comma-separated")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--rows", default="noop,changed,memory,vela,aot")
    parser.add_argument("--quick", action="store_true", help="two pipelines, one pair, a small aot-plan model")
    args = parser.parse_args()
    sizes = [2] if args.quick else [int(size) for size in args.sizes.split(",")]
    pairs = 1 if args.quick else args.pairs
    rows = set(args.rows.split(","))
    with tempfile.TemporaryDirectory(prefix="heliabuild-speed-") as folder:
        root = Path(folder)
        models = (root / "chain_a.tflite", root / "chain_b.tflite")
        for seed, path in enumerate(models):
            save_model(synthesize("chain", seed=seed), path)
        print(f"CPU time (user+sys, with children) of whole processes; {pairs} interleaved pairs per row", flush=True)
        if rows & {"noop", "changed", "memory"}:
            build_rows(sizes, pairs, rows, root, models)
        if "vela" in rows:
            residual = root / "residual.tflite"
            save_model(synthesize("residual", seed=0), residual)
            vela_row(pairs, root, [models[0]] if args.quick else [models[0], residual])
        if "aot" in rows:
            aot_row(pairs, root, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
