"""HeliaSweep end to end: real SCons, real Vela and LiteRT, the synthetic KWS chain, and the report in a real
headless Chromium.

A project is an SConstruct in a temporary folder that builds one sweep of the synthetic chain (HeliaSynth)
on the litert backend. Stages are counted from the `heliabuild: <stage> <target>` lines a build prints.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.skips import require_tool
from test_scons import build_ok, heliabuild_lines, output_of, run_scons

from heliabuild.results.reader import load_result
from heliabuild.runner.freeze import BACKENDS
from heliabuild.scons import sweep, sweep_table, wiring
from heliabuild.sweeps.table import CSV_SUFFIX, HTML_SUFFIX, JSON_SUFFIX, SweepTable

pytestmark = pytest.mark.slow

SCONSTRUCT = """\
import heliabuild.scons

SetOption("hash_format", "sha256")
env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain")
{calls}
"""
GRID = '{"accelerator": ["ethos-u55-128", "ethos-u55-256"], "budget_cycles": [20000, 40000]}'
SWEEP = f'env.HeliaSweep("kws_sweep", model, build_dir="kws_sweep", grid={GRID}, policy="policy.yaml")'
POLICY = "defaults:\n  fvp:\n    acquisition: {{state: carry, warmup_invokes: 1, measured_invokes: {n}}}\n"
FOLDERS = [
    "accelerator=ethos-u55-128,budget_cycles=20000",
    "accelerator=ethos-u55-128,budget_cycles=40000",
    "accelerator=ethos-u55-256,budget_cycles=20000",
    "accelerator=ethos-u55-256,budget_cycles=40000",
]
TABLE_HEADER = "point  "


def project(folder: Path, calls: str = SWEEP, measured: int = 2) -> Path:
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(SCONSTRUCT.format(calls=calls), encoding="utf-8")
    (folder / "policy.yaml").write_text(POLICY.format(n=measured), encoding="utf-8")
    return folder


def started(result: subprocess.CompletedProcess[str], stage: str, under: str = "") -> list[str]:
    """The targets of the `heliabuild: [k/n] <stage> <target>` start lines, those under `under` if given.

    Found anywhere in the output, not only at line starts: with -j, a stage's print() of a second line (the
    plan's `: <n> fences`) writes its text and its newline separately, and another thread's line can come
    between them."""
    pattern = re.compile(rf"heliabuild: (?:\[\d+/\d+\] )?{re.escape(stage)} (\S+?)(?=heliabuild:|\s|$)")
    targets = [match.group(1) for match in pattern.finditer(output_of(result))]
    return [target for target in targets if not target.endswith(":") and target.startswith(under)]


def printed_table(result: subprocess.CompletedProcess[str], sweep_name: str = "kws_sweep") -> list[str]:
    """The sweep table's lines the build printed (header, rule, rows; not the notes under them), or []."""
    lines = result.stdout.splitlines()
    starts = [k for k, line in enumerate(lines) if line.startswith(TABLE_HEADER)]
    if not starts:
        return []
    (start,) = starts
    end = next(k for k in range(start, len(lines)) if lines[k].startswith(f"sweep {sweep_name}: {sweep_name}/"))
    return [line for line in lines[start:end] if not line.startswith("note: ")]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A 2-accelerator x 2-budget sweep after `scons -j2 kws_sweep`. Tests must not change it."""
    folder = project(tmp_path_factory.mktemp("sweep") / "project")
    return folder, build_ok(folder, "-j2", "kws_sweep")


def test_restated_names_agree_with_the_library() -> None:
    assert sweep.BACKENDS == BACKENDS
    assert sweep_table.TABLE_SUFFIXES == (JSON_SUFFIX, CSV_SUFFIX, HTML_SUFFIX)
    assert wiring.SWEEP_METHOD_NAME == sweep.METHOD_NAME


def test_a_sweep_builds_each_point_in_its_folder_with_one_unfenced_compile_per_accelerator(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    folder, result = built
    assert "Traceback" not in output_of(result)
    assert sorted(started(result, "vela", "kws_sweep/unfenced/")) == [
        "kws_sweep/unfenced/accelerator=ethos-u55-128/kws_vela.tflite",
        "kws_sweep/unfenced/accelerator=ethos-u55-256/kws_vela.tflite",
    ]
    assert len(started(result, "vela")) == 2 + 4  # the two shared unfenced compiles, one fenced per point
    assert len(started(result, "plan-fences")) == len(started(result, "run")) == 4
    assert started(result, "sweep") == ["kws_sweep/kws_sweep_sweep.json"]
    assert sorted(path.name for path in (folder / "kws_sweep").iterdir()) == sorted(
        [*FOLDERS, "unfenced", "kws_sweep_sweep.csv", "kws_sweep_sweep.html", "kws_sweep_sweep.json"]
    )
    for index, point in enumerate(FOLDERS, 1):
        assert (folder / "kws_sweep" / point / "results" / f"kws_sweep.{index}" / "result.json").is_file()
        assert not (folder / "kws_sweep" / point / "unfenced").exists()


def test_the_table_has_one_row_per_point_in_json_csv_and_on_the_terminal(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    folder, result = built
    document = json.loads((folder / "kws_sweep" / "kws_sweep_sweep.json").read_text(encoding="utf-8"))
    table = SweepTable.from_json(document, "kws_sweep_sweep.json")
    assert table.axes == ("accelerator", "budget_cycles") and [row.point.folder for row in table.rows] == FOLDERS
    for index, row in enumerate(table.rows, 1):
        segments = json.loads(
            next((folder / "kws_sweep" / row.point.folder).glob("*_fenced_segments.json")).read_text(encoding="utf-8")
        )
        assert row.pipeline == f"kws_sweep.{index}"
        assert row.estimated_cycles == tuple(segment["op_cycles"] for segment in segments["segments"])
        assert row.vela_sram_used_kib == segments["vela"]["sram_memory_used_kib"] > 0
        assert row.vela_off_chip_flash_used_kib == segments["vela"]["off_chip_flash_memory_used_kib"] > 0
        assert row.measured["cycles"] is None and row.measured["instructions"] is None  # litert counts nothing
        latency = row.measured["latency"]
        assert latency is not None and latency.unit == "s" and latency.scope == "host_wall_clock"
        assert latency.median > 0 and len(latency.segments) == row.segment_count
        assert (folder / "kws_sweep" / row.bundle / "result.json").is_file()
        assert (row.verification, row.inputs) == ("not compared", "zeros")  # litert compares on request only
    assert table.rows[0].segment_count > table.rows[1].segment_count  # the smaller budget cuts more segments
    with (folder / "kws_sweep" / "kws_sweep_sweep.csv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert [row["point"] for row in rows] == FOLDERS
    assert [row["accelerator"] for row in rows] == ["ethos-u55-128"] * 2 + ["ethos-u55-256"] * 2
    assert rows[0]["measured_latency_scope"] == "host_wall_clock" and rows[0]["measured_cycles_median"] == ""
    assert rows[0]["vela_estimated_cycles"] == "/".join(str(c) for c in table.rows[0].estimated_cycles)
    lines = printed_table(result)
    assert len(lines) == 2 + 4 and [line.split()[0] for line in lines[2:]] == FOLDERS
    assert all("  measured (host time, LiteRT, n=2)  " in line for line in lines[2:])
    assert all(
        re.search(r"\d (u|m)s +\S+ (u|m)s \(\d+\.\d%\)( !)?  not compared\s+zeros\s", line) for line in lines[2:]
    )
    assert "note: host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate" in result.stdout
    assert "kws_sweep.1 " not in result.stdout.split("sweep kws_sweep: 4 points")[0]  # no pipeline-summary rows
    summary = json.loads((folder / "build" / "heliabuild-summary.json").read_text(encoding="utf-8"))
    assert summary["pipelines"] == [] and summary["sweeps"] == [
        {
            "sweep": "kws_sweep",
            "csv": "kws_sweep/kws_sweep_sweep.csv",
            "json": "kws_sweep/kws_sweep_sweep.json",
            "html": "kws_sweep/kws_sweep_sweep.html",
        }
    ]


def test_sweep_builds_are_byte_identical_to_the_same_pipelines_built_alone(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    folder, _ = built
    calls = "\n".join(
        f'env.HeliaPipeline("kws_sweep.{index}", model, accelerator="{point.split(",")[0].split("=")[1]}", '
        f'budget_cycles={point.split("=")[-1]}, policy="policy.yaml", build_dir="kws_sweep/{point}", stem="kws_sweep")'
        for index, point in enumerate(FOLDERS, 1)
    )
    alone = project(tmp_path / "alone", calls)
    result = build_ok(alone, "-j2")
    assert len(started(result, "vela")) == 4 + 4  # alone, each pipeline compiles the unfenced model itself
    compared = 0
    for point in FOLDERS:
        ours, theirs = folder / "kws_sweep" / point, alone / "kws_sweep" / point
        files = sorted(
            path.relative_to(theirs)
            for path in theirs.rglob("*")
            if path.is_file() and path.relative_to(theirs).parts[0] not in ("results", "unfenced")
        )
        assert files and files == sorted(
            p.relative_to(ours) for p in ours.rglob("*") if p.is_file() and p.relative_to(ours).parts[0] != "results"
        )
        for name in files:
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
            compared += 1
        accelerator = point.split(",")[0]
        shared = folder / "kws_sweep" / "unfenced" / accelerator
        for path in (theirs / "unfenced").iterdir():
            assert (shared / path.name).read_bytes() == path.read_bytes(), path
    assert compared >= 4 * 8


def files_under(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under `folder` by its path relative to it, but those under a first folder in `skip`."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and path.relative_to(folder).parts[0] not in skip
    }


def test_points_that_differ_only_in_policy_share_fence_vela_and_aot_plan(tmp_path: Path) -> None:
    """2 policies x 2 accelerators: fence, Vela and aot-plan once per accelerator, runner and run per point,
    each point's files byte-identical to its pipeline built alone; a policy change reruns only its points."""
    grid = '{"policy": ["policy.yaml", "other/policy.yaml"], "accelerator": ["ethos-u55-128", "ethos-u55-256"]}'
    sweep = f'env.HeliaSweep("kws_sweep", model, build_dir="kws_sweep", grid={grid}, fences=[3])'
    folder = project(tmp_path / "project", sweep)
    (folder / "other").mkdir()
    shutil.copy(folder / "policy.yaml", folder / "other" / "policy.yaml")
    result = build_ok(folder, "-j2", "kws_sweep")
    shared = [f"kws_sweep/accelerator={accelerator}/" for accelerator in ("ethos-u55-128", "ethos-u55-256")]
    for stage, name in (("fence", "kws_sweep_fenced.tflite"), ("vela", "kws_sweep_fenced_vela.tflite")):
        assert sorted(started(result, stage)) == [f"{under}{name}" for under in shared], output_of(result)
    assert sorted(started(result, "aot-plan")) == [f"{under}kws_sweep_plan.json" for under in shared]
    assert len(started(result, "runner")) == len(started(result, "run")) == 4
    points = [row["folder"] for row in json.loads((folder / "kws_sweep" / "kws_sweep_sweep.json").read_text())["rows"]]
    assert points[0] == "policy=policy.yaml,accelerator=ethos-u55-128" and len(points) == 4
    assert len(printed_table(result)) == 2 + 4

    calls = "\n".join(
        f'env.HeliaPipeline("kws_sweep.{index}", model, fences=[3], stem="kws_sweep", build_dir="alone/{point}", '
        f'policy="{"other/" if "other" in point else ""}policy.yaml", accelerator="{point.split("=")[-1]}")'
        for index, point in enumerate(points, 1)
    )
    alone = project(tmp_path / "alone", calls)
    (alone / "other").mkdir()
    shutil.copy(alone / "policy.yaml", alone / "other" / "policy.yaml")
    build_ok(alone, "-j2")
    for point in points:
        theirs = files_under(alone / "alone" / point, skip=("results",))
        ours = files_under(folder / "kws_sweep" / point, skip=("results",))
        ours |= files_under(folder / "kws_sweep" / point.split(",")[1])
        assert sorted(ours) == sorted(theirs) and len(theirs) >= 8
        assert all(ours[name] == data for name, data in theirs.items()), point

    again = build_ok(folder, "kws_sweep")
    assert heliabuild_lines(again) == [] and "`kws_sweep' is up to date." in again.stdout
    (folder / "other" / "policy.yaml").write_text(POLICY.format(n=3), encoding="utf-8")
    changed = build_ok(folder, "kws_sweep")
    assert [line.split()[1] for line in heliabuild_lines(changed)] == ["runner", "run", "runner", "run", "sweep"]
    assert {target.split("/")[1] for target in started(changed, "run")} == set(points[2:])


def test_a_backend_axis_shares_fence_and_vela_and_the_aot_plan_but_for_qemu_m55(tmp_path: Path) -> None:
    """litert and fvp read one AOT plan; qemu-m55's is of the model itself, for its platform (a dry run)."""
    sweep = 'env.HeliaSweep("s", model, build_dir="s", grid={"backend": ["litert", "fvp"]})'
    two = build_ok(project(tmp_path / "two", sweep), "-n")
    assert [started(two, stage) for stage in ("vela", "aot-plan")] == [
        ["s/shared/kws_vela.tflite"],
        ["s/shared/s_plan.json"],
    ]
    assert len(started(two, "runner")) == 2
    grid = '{"backend": ["litert", "fvp", "qemu-m55"]}'
    sweep = f'env.HeliaSweep("s", model, build_dir="s", grid={grid}, fences=[3])'
    three = build_ok(project(tmp_path / "three", sweep), "-n")
    assert started(three, "fence") == ["s/shared/s_fenced.tflite"] and len(started(three, "vela")) == 1
    assert sorted(started(three, "aot-plan")) == [f"s/backend={b}/s_plan.json" for b in ("fvp", "litert", "qemu-m55")]


def test_a_second_build_is_up_to_date_and_the_table_reruns_only_when_a_bundle_changes(tmp_path: Path) -> None:
    folder = project(tmp_path / "project", SWEEP.replace("[20000, 40000]", "[20000]"))
    first = build_ok(folder, "kws_sweep")
    assert started(first, "sweep") == ["kws_sweep/kws_sweep_sweep.json"]
    again = build_ok(folder, "kws_sweep")
    assert heliabuild_lines(again) == [] and "`kws_sweep' is up to date." in again.stdout
    assert len(printed_table(again)) == 2 + 2  # printed again, from the table on disk
    tables = sorted((folder / "kws_sweep").glob("kws_sweep_sweep.*"))
    written = {path: path.read_bytes() for path in tables}
    assert len(tables) == 3 and not any(str(tmp_path).encode() in data for data in written.values())
    for path in tables:
        path.unlink()
    remade = build_ok(folder, "kws_sweep")  # the same bundles give the same bytes
    assert [line.split()[1] for line in heliabuild_lines(remade)] == ["sweep"]
    assert {path: path.read_bytes() for path in tables} == written
    (folder / "policy.yaml").write_text(POLICY.format(n=3), encoding="utf-8")
    changed = build_ok(folder, "kws_sweep")
    assert len(started(changed, "run")) == 2 and started(changed, "sweep") == ["kws_sweep/kws_sweep_sweep.json"]
    assert started(changed, "vela") == []
    point = build_ok(folder, "kws_sweep.2")  # one point: its pipeline's summary row, not the sweep's table
    assert printed_table(point) == [] and re.search(r"^kws_sweep\.2 +litert +\d", point.stdout, flags=re.M)
    build_ok(folder, "-c", "kws_sweep")
    assert sorted(path.name for path in folder.iterdir()) == [".sconsign_sha256.dblite", "SConstruct", "policy.yaml"]


def test_a_24_point_sweep_with_linked_axes_builds_with_j2(tmp_path: Path) -> None:
    """3 (accelerator, platform) pairs, U55 and U85, x 4 budgets (one of them none: no fences) x 2 policies."""
    grid = (
        '{("accelerator", "platform"): [("ethos-u55-64", "corstone300_ethos_u55"), '
        '("ethos-u55-256", "corstone300_ethos_u55"), ("ethos-u85-256", "corstone320_ethos_u85")], '
        '"budget_cycles": [15000, 30000, 60000, None], "policy": ["policy.yaml", "other/policy.yaml"]}'
    )
    folder = project(tmp_path / "project", f'env.HeliaSweep("big", model, build_dir="big", grid={grid})')
    (folder / "other").mkdir()
    shutil.copy(folder / "policy.yaml", folder / "other" / "policy.yaml")
    result = build_ok(folder, "-j2", "big")
    assert sorted(started(result, "vela", "big/unfenced/")) == [
        f"big/unfenced/accelerator={accelerator}/kws_vela.tflite"
        for accelerator in ("ethos-u55-256", "ethos-u55-64", "ethos-u85-256")
    ]
    assert len(started(result, "run")) == 24, output_of(result)
    table = json.loads((folder / "big" / "big_sweep.json").read_text(encoding="utf-8"))
    folders = [row["folder"] for row in table["rows"]]
    assert len(set(folders)) == 24 and all((folder / "big" / name).is_dir() for name in folders)
    assert folders[:2] == [
        "accelerator=ethos-u55-64,platform=corstone300_ethos_u55,budget_cycles=15000,policy=policy.yaml",
        "accelerator=ethos-u55-64,platform=corstone300_ethos_u55,budget_cycles=15000,policy=other_policy.yaml",
    ]
    assert (
        folders[-1]
        == "accelerator=ethos-u85-256,platform=corstone320_ethos_u85,budget_cycles=none,policy=other_policy.yaml"
    )
    assert {row["segments"] for row in table["rows"] if row["options"]["budget_cycles"] is None} == {1}
    assert len(printed_table(result, "big")) == 2 + 24


ERRORS = [
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"acclerator": ["ethos-u55-128"]})',
        "HeliaSweep s: unknown grid axis acclerator=['ethos-u55-128']; did you mean accelerator=?",
    ),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"accelerator": ["ethos-u55-129"]})',
        "HeliaSweep s: accelerator 'ethos-u55-129' is not an accelerator Vela knows; did you mean ethos-u55-128",
    ),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"backend": ["litrt"]})',
        "HeliaSweep s: backend 'litrt' is not a backend; did you mean litert?",
    ),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"budget_cycles": [20000, -5]})',
        "HeliaSweep s: point budget_cycles=-5: HeliaPipeline s.2: budget_cycles is -5; expected a positive number",
    ),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"budget_cycles": [20000]}, budget_cycles=1)',
        "HeliaSweep s: budget_cycles given both as a grid axis and as a keyword of every point",
    ),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"budget_cycles": 20000})',
        "HeliaSweep s: grid axis budget_cycles is 20000; expected a non-empty list of values",
    ),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"fences": [[3], [3]]})',
        "HeliaSweep s: grid axis fences lists [3] twice",
    ),
    ('env.HeliaSweep("s", model, build_dir="s", grid={})', "HeliaSweep s: the grid is {}; expected a mapping"),
    (
        'env.HeliaSweep("s", model, build_dir="s", grid={"build_dir": ["a"]})',
        "HeliaSweep s: build_dir is set by the sweep; it is neither a grid axis nor a keyword",
    ),
]


@pytest.mark.parametrize(("call", "message"), ERRORS, ids=[str(k) for k in range(len(ERRORS))])
def test_a_grid_that_cannot_work_is_one_user_error_naming_the_sconstruct_line(
    tmp_path: Path, call: str, message: str
) -> None:
    folder = project(tmp_path / "project", call)
    before = sorted(path.name for path in folder.iterdir())
    result = run_scons(folder, "s")
    assert result.returncode == 2, output_of(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("scons: *** ")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    line = SCONSTRUCT.format(calls=call).splitlines().index(call) + 1
    assert errors[0].endswith(f"(called at {folder / 'SConstruct'}:{line})"), errors[0]
    assert f'File "{folder / "SConstruct"}", line {line}' in result.stderr
    assert "Traceback" not in result.stderr
    after = sorted(path.name for path in folder.iterdir() if path.name != ".sconsign.heliabuild.lock")
    assert after == before


def test_pipelines_given_one_unfenced_dir_share_its_compile_and_other_vela_options_there_are_refused(
    tmp_path: Path,
) -> None:
    shared = (
        'env.HeliaPipeline("a", model, budget_cycles=20000, build_dir="a", unfenced_dir="shared")\n'
        'env.HeliaPipeline("b", model, budget_cycles=40000, build_dir="b", unfenced_dir="shared"{more})'
    )
    dry = build_ok(project(tmp_path / "shared", shared.format(more="")), "-n")
    assert started(dry, "vela", "shared/") == ["shared/kws_vela.tflite"] and len(started(dry, "plan-fences")) == 2
    folder = project(tmp_path / "other", shared.format(more=', accelerator="ethos-u55-256"'))
    refused = run_scons(folder, "-n")
    assert refused.returncode == 2, output_of(refused)
    assert (
        "scons: *** heliabuild: HeliaPipeline b: shared/kws_vela.tflite is the vela-unfenced output of pipeline a, "
        "made from other inputs (here HELIA_VELA_ACCELERATOR='ethos-u55-256'); give each its own folder "
        f"(called at {folder / 'SConstruct'}:7)"
    ) in refused.stderr


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'env.HeliaPipeline("a", model, stage_dirs={"runner": "shared"})',
            "HeliaPipeline a: stage_dirs is {'runner': 'shared'}; expected a mapping of vela-unfenced, plan-fences, "
            "fence, vela, aot-plan, firmware to folders",
        ),
        (
            'env.HeliaPipeline("a", model, stem="a/b")',
            "HeliaPipeline a: stem is 'a/b'; a file stem is letters, digits, '_', '.', '+' and '-'",
        ),
        (
            'env.HeliaPipeline("a", model, fences=[3], stem="s", build_dir=".")\n'
            'env.HeliaPipeline("b", model, fences=[4], stem="s", build_dir=".")',
            "HeliaPipeline b: s_fenced.tflite is the fence output of pipeline a, made from other inputs (here "
            "HELIA_FENCES=[4]); give each its own folder",
        ),
    ],
    ids=["stage", "stem", "other-inputs"],
)
def test_stage_dirs_and_stem_that_cannot_work_are_one_user_error(tmp_path: Path, call: str, message: str) -> None:
    folder = project(tmp_path / "project", call)
    result = run_scons(folder, "-n")
    assert result.returncode == 2, output_of(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("scons: *** ")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert sorted(path.name for path in folder.iterdir() if path.suffix != ".lock") == ["SConstruct", "policy.yaml"]


def test_the_sweep_in_docs_sweeps_md_reads_and_plans_its_points(tmp_path: Path) -> None:
    """The first Python block of docs/sweeps.md, verbatim as an SConstruct, in a dry run."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "sweeps.md").read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "SConstruct").write_text(block, encoding="utf-8")
    (folder / "policy.yaml").write_text(POLICY.format(n=1), encoding="utf-8")
    result = build_ok(folder, "-n", "kws_sweep")
    assert len(started(result, "vela", "build/kws_sweep/unfenced/")) == 3 and len(started(result, "run")) == 9
    assert "build/kws_sweep/accelerator=ethos-u55-64,budget_cycles=none/results/kws_sweep.3/result.json" in started(
        result, "run"
    )


# --- the report in a real browser ----------------------------------------------------------------------------------


def chromium() -> str:
    """Debian's chromium; under CI (.ci/run installs it) its absence fails the test, elsewhere it skips."""
    return require_tool("chromium", "Debian: apt-get install chromium")


def browse(page: Path, profile: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on `page` with `arguments` (no network, no GPU, a fresh profile)."""
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *arguments,
        page.as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def test_the_report_renders_its_table_and_plots_in_a_headless_browser(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    from PIL import Image

    folder, _ = built
    page = folder / "kws_sweep" / "kws_sweep_sweep.html"
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    table = SweepTable.from_json(json.loads(page.with_name("kws_sweep_sweep.json").read_text("utf-8")), "json")
    dom = browse(page, tmp_path / "profile", "--dump-dom").stdout
    body = dom[dom.index('<table id="sweep-table">') :]
    rows = re.findall(r"<tr>(.*?)</tr>", body[body.index("<tbody>") :], flags=re.S)
    assert [re.search(r"<td>(.*?)</td>", row).group(1) for row in rows] == [f"kws_sweep.{k}" for k in range(1, 5)]
    links = [re.search(r'<td class="path"><a href="(.*?)">(.*?)/results/', row).groups() for row in rows]
    assert [folder for _, folder in links] == FOLDERS
    assert all((page.parent / href).is_file() and href.endswith("/result.json") for href, _ in links)
    estimates = dom[dom.index('<svg id="estimates"') : dom.index("</svg>", dom.index('<svg id="estimates"'))]
    assert estimates.count('class="segment"') == sum(row.segment_count for row in table.rows)
    panel_start = dom.index('<svg id="measured-latency"')
    panel = dom[panel_start : dom.index("</svg>", panel_start)]
    assert panel.count('class="measured"') == len(table.rows) and panel.count('class="spread"') == len(table.rows)
    assert len(set(re.findall(r'<circle class="measured"[^>]* fill="(#[0-9a-f]{6})"', panel))) == len(table.rows)
    assert re.search(r">host time \((u|m)s(, log scale)?\)</text>", panel)  # its own axis, in its unit
    values = re.findall(r'<text class="value"[^>]*>(.*?)</text>', panel)
    assert len(values) == 4 and all(
        re.fullmatch(r"[\d.,]+ (u|m)s, n=2, spread \S+ (u|m)s \(\d+\.\d%\)( !)?", v) for v in values
    )
    assert 'id="measured-cycles"' not in dom and 'id="measured-instructions"' not in dom
    assert "measured (host time, LiteRT): the median of each point" in dom and "Vela NPU estimate per segment" in dom
    (provenance,) = re.findall(r'<p class="note" id="provenance">(.*?)</p>', dom)
    bundles = [load_result(page.parent / row.bundle).document for row in table.rows]
    days = sorted({bundle["created_at"][:10] for bundle in bundles})
    version = bundles[0]["provider_versions"]["heliabuild"]
    vela = json.loads(next((folder / "kws_sweep" / FOLDERS[0]).glob("*_fenced_segments.json")).read_text())["vela"]
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    assert (
        provenance == f"heliabuild {version}, Vela {vela['version']}, measured {when} (UTC, the bundles' created_at)."
    )

    screenshot = tmp_path / "report.png"
    browse(page, tmp_path / "profile", f"--screenshot={screenshot}", "--window-size=1280,2000")
    image = Image.open(screenshot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = {colour for _, colour in image.getcolors(maxcolors=1 << 20)}
    assert len(colours) > 50  # text, bars, points: not a blank page
    segment_0 = (0x44, 0x77, 0xAA)
    top_half = image.crop((0, 0, 1280, 1000))
    assert sum(count for count, colour in top_half.getcolors(maxcolors=1 << 20) if colour == segment_0) > 1000
