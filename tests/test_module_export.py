"""`heliabuild module` / heliabuild.module.export: the exported folder's contents, its manifest, its
determinism in any folder, the kernel sources derived from what the generator calls, and the refusals (each
one error, exit 2, nothing written)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild import __version__
from heliabuild.aot.config import AotConfig
from heliabuild.aot.stage import write_plan
from heliabuild.codegen.calls import KernelCall
from heliabuild.files import sha256_bytes, sha256_file
from heliabuild.firmware.toolchain import C_FLAGS, CPU_FLAGS
from heliabuild.model import save_model
from heliabuild.module.export import export_module, render_export
from heliabuild.module.folder import MANIFEST
from heliabuild.module.kernels import ModuleError, called_functions, kernel_sources, source_table
from heliabuild.module.layouts import LAYOUTS
from heliabuild.schema_files import is_valid
from heliabuild.synth import single_op_model, synthesize

PLATFORM = "mps3_an547"
STREAMING = AotConfig(tensors=[{"pattern": "*", "residency": "stream"}], stream_pool={"memory": "DTCM", "bytes": 32768})


def _model_and_plan(folder: Path, kind: str = "chain", seed: int = 0, config: AotConfig | None = None) -> tuple:
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / f"{kind}.tflite"
    save_model(synthesize(kind, seed=seed), model)
    write_plan(model, folder, "net", PLATFORM, config)
    return model, folder / "net_plan.json"


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _model_and_plan(tmp_path_factory.mktemp("chain"))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_an_export_is_byte_identical_in_two_folders(tmp_path: Path, chain: tuple[Path, Path], layout: str) -> None:
    model, plan = chain
    first = export_module(model, plan, tmp_path / "a" / "module", layout=layout)
    second = export_module(model, plan, tmp_path / "b" / "deeper" / "other", layout=layout)
    assert _tree(first.folder) == _tree(second.folder)
    assert not [p for p in (tmp_path / "a").iterdir() if p.name != "module"]  # no staging folder left


def test_the_manifest_lists_every_file_with_its_hash(tmp_path: Path, chain: tuple[Path, Path]) -> None:
    model, plan = chain
    export = export_module(model, plan, tmp_path / "module", layout="cmake")
    document = json.loads((export.folder / MANIFEST).read_text())
    assert is_valid(document, "module.schema.json")
    files = _tree(export.folder)
    assert set(document["files"]) == set(files) - {MANIFEST}
    for name, entry in document["files"].items():
        assert entry == {"sha256": sha256_bytes(files[name]), "bytes": len(files[name])}
    assert document["model"] == {"name": "chain.tflite", "sha256": sha256_file(model)}
    assert document["plan"] == {"name": "net_plan.json", "sha256": sha256_file(plan)}
    assert document["layout"] == "cmake" and document["prefix"] == "net" and document["heliabuild"] == __version__
    assert document["arena"]["section"] is None and document["arena"]["alignment"] == 16


def test_the_readme_names_the_hashes_the_version_and_the_flags(tmp_path: Path, chain: tuple[Path, Path]) -> None:
    model, plan = chain
    text = (export_module(model, plan, tmp_path / "module").folder / "README.md").read_text()
    assert sha256_file(model) in text and sha256_file(plan) in text
    assert f"| heliabuild | {__version__} |" in text
    assert " ".join([*CPU_FLAGS, *C_FLAGS]) in text
    assert "Apache-2.0" in (tmp_path / "module" / "LICENSE").read_text()


def test_the_public_header_describes_inputs_outputs_and_arena(tmp_path: Path, chain: tuple[Path, Path]) -> None:
    from heliabuild.aot.facts import tensor_facts
    from heliabuild.model import load_model

    model, plan = chain
    export = export_module(model, plan, tmp_path / "module")
    header = (export.folder / "include" / "net_model.h").read_text()
    layout = json.loads((export.folder / "net_layout.json").read_text())
    loaded = load_model(model)
    facts = tensor_facts(loaded, layout["inputs"][0]["tensor"])
    q = facts.quantization
    assert q is not None
    assert f"#define NET_MODEL_INPUT0_BYTES {layout['inputs'][0]['bytes']}u" in header
    assert f"#define NET_MODEL_INPUT0_OFFSET {layout['inputs'][0]['offset']}u" in header
    assert f"#define NET_MODEL_INPUT0_SHAPE {{{', '.join(map(str, facts.shape))}}}" in header
    assert f"#define NET_MODEL_INPUT0_SCALE {q.scales[0]!r}f" in header
    assert f"#define NET_MODEL_INPUT0_ZERO_POINT ({q.zero_points[0]})" in header
    assert "#define NET_MODEL_INPUT0_DTYPE HELIA_MODULE_DTYPE_INT8" in header
    assert f"#define NET_MODEL_ARENA_BYTES {layout['arena']['bytes']}u" in header
    assert "#define NET_MODEL_ARENA_ALIGNMENT 16u" in header
    version = re.search(r'#define NET_MODEL_VERSION "([^"]*)"', header)
    assert version is not None and sha256_file(model) in version[1] and sha256_file(plan) in version[1]
    for symbol in ("net_model_init(helia_model_context *ctx);", "net_model_run(helia_model_context *ctx);"):
        assert symbol in header
    assert "net_model_copy" not in header  # no schedule units, no copy hook


def test_the_kernel_sources_are_what_the_generated_calls_need(tmp_path: Path) -> None:
    from heliabuild.codegen.module import render_module

    for kind in ("chain", "residual"):
        model, plan = _model_and_plan(tmp_path / kind, kind)
        files = render_export(model, plan)
        exported = {Path(n).name for n in files if n.startswith("src/") and n.endswith(".c") and "net_model" not in n}
        calls = render_module(model, plan, "net").calls
        table = source_table()
        direct = {table.defined_in[name] for name in called_functions(calls)}
        assert direct <= exported
        for source in exported - direct:  # a source no call names is one that another exported source calls
            defines = {name for name, where in table.defined_in.items() if where == source}
            assert any(table.calls[other] & defines for other in exported - {source})
    residual = {Path(n).name for n in render_export(*_model_and_plan(tmp_path / "r2", "residual"))}
    assert "ops_elementwise.c" in residual  # its ADDs
    assert "ops_elementwise.c" not in {Path(n).name for n in render_export(*_model_and_plan(tmp_path / "c2"))}


def test_a_kernel_added_to_the_sources_flows_into_the_export(tmp_path: Path) -> None:
    """The table is read from the C sources: a new kernel file (as ops-a or ops-b add) is picked up when a call
    names its entries, and the files it calls and includes come along."""
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "helia_new.h").write_text('#include "helia_status.h"\n')
    (folder / "helia_status.h").write_text("/* status */\n")
    (folder / "ops_new.c").write_text(
        '#include "helia_new.h"\n'
        "static int helper(void) { return 0; }\n"
        "helia_status helia_new_s8_check(const void *args)\n{\n    return helia_shared(args);\n}\n"
        "helia_status helia_new_s8_run(const void *args)\n{\n    return helper();\n}\n"
    )
    (folder / "ops_shared.c").write_text("int helia_shared(const void *args)\n{\n    return args == 0;\n}\n")
    (folder / "ops_unused.c").write_text("int helia_unused(void)\n{\n    return 1;\n}\n")
    call = KernelCall(0, "op0", "NEW", "helia_new_s8_check", "helia_new_s8_run", "args", (), (), ())
    found = kernel_sources([call], ["helia_new.h"], source_table(folder))
    assert found.sources == ("ops_new.c", "ops_shared.c")
    assert found.headers == ("helia_new.h", "helia_status.h")
    with pytest.raises(ModuleError, match="defines helia_missing_run"):
        kernel_sources([replace(call, run="helia_missing_run")], [], source_table(folder))


def test_a_second_export_keeps_unchanged_files_untouched(tmp_path: Path, chain: tuple[Path, Path]) -> None:
    model, plan = chain
    folder = tmp_path / "module"
    export_module(model, plan, folder, layout="cmake")
    past = 1_000_000_000_000_000_000
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(past, past))
    streaming_plan = _model_and_plan(tmp_path / "streaming", config=STREAMING)[1]
    export_module(model, streaming_plan, folder, layout="cmake")
    changed = {
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.stat().st_mtime_ns != past
    }
    assert "src/ops_conv.c" not in changed and "CMakeLists.txt" not in changed
    assert {"src/net_model.c", "include/net_model.h", "src/net_model_io.c", MANIFEST} <= changed


def test_a_streaming_plan_gets_the_copy_hook_and_its_sections(tmp_path: Path) -> None:
    model, plan = _model_and_plan(tmp_path, config=STREAMING)
    files = render_export(model, plan)
    source = files["src/net_model.c"].decode()
    assert re.search(r"net_model_copy\(&stream_pool\[\d+\], unit_\d+, \d+u\);", source)
    assert "memcpy(&stream_pool" not in source
    assert 'section(".rodata.helia.stream")' in source and 'section(".bss.helia.stream_pool")' in source
    assert "__attribute__((weak)) void net_model_copy(" in files["src/net_model_io.c"].decode()
    assert (
        "void net_model_copy(void *destination, const void *source, size_t bytes);"
        in files["include/net_model.h"].decode()
    )


def test_the_arena_is_the_callers_or_in_the_named_section(tmp_path: Path, chain: tuple[Path, Path]) -> None:
    model, plan = chain
    caller = render_export(model, plan)["src/net_model.c"].decode()
    assert "extern uint8_t net_model_arena[];" in caller and ".arena" not in caller
    placed = render_export(model, plan, arena_section=".bss.npu_arena")["src/net_model.c"].decode()
    assert re.search(r'^uint8_t net_model_arena\[\d+\] __attribute__\(\(section\("\.bss\.npu_arena"\)', placed, re.M)
    with pytest.raises(ModuleError, match="is not a section name"):
        render_export(model, plan, arena_section='x") int y; ("')


# ---- refusals: one error, exit 2, nothing written -------------------------------------------------------------


def _nothing_written(parent: Path, expected: set[str]) -> None:
    assert {p.name for p in parent.iterdir()} == expected


def test_a_model_the_generator_cannot_admit_is_refused(tmp_path: Path, cli) -> None:
    model = tmp_path / "equal.tflite"
    save_model(single_op_model("equal", "float32", [(2, 3), (3,)]), model)
    write_plan(model, tmp_path, "net", PLATFORM)
    result = cli("module", model, tmp_path / "net_plan.json", "-o", tmp_path / "out")
    assert result.code == 2, result.err
    assert result.err.startswith("heliabuild: error: ") and result.err.count("\n") == 1 and "EQUAL" in result.err
    _nothing_written(tmp_path, {"equal.tflite", "net_plan.json", "net_report.json"})


def test_a_plan_of_another_model_is_refused(tmp_path: Path, cli) -> None:
    first, plan = _model_and_plan(tmp_path / "a", seed=0)
    second, _ = _model_and_plan(tmp_path / "b", seed=1)
    result = cli("module", second, plan, "-o", tmp_path / "out")
    assert result.code == 2
    assert f"model.sha256 {sha256_file(first)} is not the model's sha256 {sha256_file(second)}" in result.err
    assert not (tmp_path / "out").exists()


def test_an_unknown_layout_is_refused(tmp_path: Path, chain: tuple[Path, Path], cli, monkeypatch) -> None:
    model, plan = chain
    monkeypatch.setenv("HELIA_MODULE_LAYOUT", "meson")
    result = cli("module", model, plan, "-o", tmp_path / "out")
    assert result.code == 2
    assert result.err == (
        "heliabuild: error: unknown module layout 'meson'; the layouts are plain, cmake, zephyr, cmsis-pack\n"
    )
    assert cli("module", model, plan, "-o", tmp_path / "out", "--layout", "meson").code == 2
    _nothing_written(tmp_path, set())


@pytest.mark.parametrize(
    "damage",
    [
        "user file",
        "no manifest",
        "extra file",
        "edited file",
        "garbage manifest",
        "huge manifest",
        "another document",
        "symlink",
        "user subfolder",
        "fifo",
    ],
)
def test_a_folder_holding_a_users_files_is_refused_and_left_alone(
    tmp_path: Path, chain: tuple[Path, Path], cli, damage: str
) -> None:
    model, plan = chain
    folder = tmp_path / "out"
    if damage == "user file":
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
    else:
        export_module(model, plan, folder)
        if damage == "no manifest":
            (folder / MANIFEST).unlink()
        elif damage == "extra file":
            (folder / "src" / "my_patch.c").write_text("int x;\n")
        elif damage == "edited file":
            (folder / "src" / "net_model.c").write_text("/* tuned by hand */\n")
        elif damage == "garbage manifest":
            (folder / MANIFEST).write_bytes(b"\xff\xfe{")
        elif damage == "huge manifest":
            (folder / MANIFEST).write_bytes(b" " * (5 << 20) + (folder / MANIFEST).read_bytes())
        elif damage == "another document":
            (folder / MANIFEST).write_text(json.dumps({"files": {}}))
        elif damage == "fifo":
            os.mkfifo(folder / "src" / "pipe")
        elif damage == "symlink":
            (folder / "link.c").symlink_to(folder / "src" / "net_model.c")
        else:
            (folder / "build").mkdir()
            (folder / "build" / "CMakeCache.txt").write_text("mine")
    before = _tree(folder)
    result = cli("module", model, plan, "-o", folder)
    assert result.code == 2, result.err
    assert "heliabuild replaces only a folder that holds an earlier export of its own" in result.err
    assert _tree(folder) == before
    assert {p.name for p in tmp_path.iterdir()} == {"out"}


def test_an_output_that_is_a_symlink_or_a_file_is_refused(tmp_path: Path, chain: tuple[Path, Path], cli) -> None:
    model, plan = chain
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "file").write_text("mine")
    assert "it is a symlink" in cli("module", model, plan, "-o", tmp_path / "link").err
    assert "it is not a folder" in cli("module", model, plan, "-o", tmp_path / "file").err
    assert (tmp_path / "file").read_text() == "mine" and not list((tmp_path / "real").iterdir())


def test_an_output_folder_holding_an_input_is_refused(tmp_path: Path, cli) -> None:
    model, plan = _model_and_plan(tmp_path / "inputs")
    result = cli("module", model, plan, "-o", tmp_path / "inputs")
    assert result.code == 2 and "never writes over, into or around its own inputs" in result.err


def test_the_cli_writes_the_folder_and_says_so(tmp_path: Path, chain: tuple[Path, Path], cli) -> None:
    model, plan = chain
    result = cli("module", model, plan, "-o", tmp_path / "out", "--layout", "zephyr")
    assert result.code == 0, result.err
    count = len(_tree(tmp_path / "out"))
    assert result.out == f"heliabuild: module {tmp_path / 'out'} (zephyr, {count} files)\n"
    assert cli("module", model, plan, "-o", tmp_path / "out", "--layout", "cmake").code == 0  # over our own export
    assert (tmp_path / "out" / "CMakeLists.txt").is_file() and not (tmp_path / "out" / "zephyr").exists()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_scons_wiring_restates_the_exports_file_names(
    tmp_path: Path, chain: tuple[Path, Path], layout: str
) -> None:
    """heliabuild.scons.module names the export's files of fixed name without importing the library (no numpy
    while SConscripts are read): they must be the export's files other than the kernels it copies."""
    from heliabuild.scons.module import FIXED_FILES, LAYOUT_FILES

    model, plan = chain
    files = set(render_export(model, plan, layout=layout))
    declared = {name.format(prefix="net") for name in (*FIXED_FILES, *LAYOUT_FILES[layout])}
    kernels = {name for name in files if name.startswith("src/") and "net_model" not in name}
    assert declared == files - kernels


@given(st.text(max_size=64))
def test_a_tensor_name_becomes_a_c_string_that_decodes_to_its_utf8(name: str) -> None:
    from heliabuild.module.public import c_string

    literal = c_string(name)
    assert literal.isascii() and literal.startswith('"') and literal.endswith('"')
    body, decoded, position = literal[1:-1], bytearray(), 0
    assert "??" not in body  # no trigraph
    while position < len(body):
        if body[position] == "\\":
            follow = body[position + 1]
            if follow.isdigit():
                decoded.append(int(body[position + 1 : position + 4], 8))
                position += 4
                continue
            decoded.append(ord(follow))
            position += 2
            continue
        assert body[position] != '"'
        decoded.append(ord(body[position]))
        position += 1
    assert bytes(decoded) == name.encode("utf-8")


def test_a_fenced_model_exports_with_the_fence_kernel(tmp_path: Path) -> None:
    from heliabuild.fence import rewrite_model_with_fences

    source = tmp_path / "chain.tflite"
    save_model(synthesize("chain", seed=0), source)
    fenced = tmp_path / "chain_fenced.tflite"
    rewrite_model_with_fences(source, [2, 5]).save(fenced)
    write_plan(fenced, tmp_path, "net", PLATFORM)
    files = render_export(fenced, tmp_path / "net_plan.json")
    assert {"src/stream_split.c", "src/stream_split.h"} <= set(files)
    source_text = files["src/net_model.c"].decode()
    assert source_text.count("helia_stream_split_prepare(") == 2
    assert source_text.count("if (ctx->on_fence != NULL)") == 2


_NAMES = st.lists(
    st.sampled_from(["a.c", "b.h", "src/c.c", "src/d.h", "include/e.h", "zephyr/module.yml"]), unique=True, min_size=1
)


@given(first=_NAMES, second=_NAMES, content=st.binary(max_size=64), user_file=st.booleans())
def test_publish_replaces_only_its_own_export_and_keeps_unchanged_files(
    tmp_path_factory: pytest.TempPathFactory, first: list[str], second: list[str], content: bytes, user_file: bool
) -> None:
    from heliabuild.module.folder import earlier_export, publish

    def files_of(names: list[str]) -> dict[str, bytes]:
        files = {name: content + name.encode() for name in names}
        listed = {name: {"sha256": sha256_bytes(data), "bytes": len(data)} for name, data in files.items()}
        manifest = {
            "format": "heliabuild-module/1",
            "heliabuild": __version__,
            "prefix": "net",
            "layout": "plain",
            "model": {"name": "m.tflite", "sha256": "0" * 64},
            "plan": {"name": "p.json", "sha256": "0" * 64},
            "arena": {"bytes": 16, "alignment": 16, "section": None},
            "compiler_flags": [],
            "files": listed,
        }
        return {**files, MANIFEST: json.dumps(manifest).encode()}

    folder = tmp_path_factory.mktemp("publish") / "module"
    publish(folder, files_of(first), earlier_export(folder))
    assert _tree(folder) == files_of(first)
    past = 1_000_000_000_000_000_000
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(past, past))
    if user_file:
        (folder / "mine.txt").write_text("mine")
        before = _tree(folder)
        with pytest.raises(ModuleError, match=r"mine\.txt is not a file of the earlier export"):
            earlier_export(folder)
        assert _tree(folder) == before
        return
    publish(folder, files_of(second), earlier_export(folder))
    assert _tree(folder) == files_of(second)
    kept = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.stat().st_mtime_ns == past}
    assert kept == set(first) & set(second)
    assert [p.name for p in folder.parent.iterdir()] == ["module"]
