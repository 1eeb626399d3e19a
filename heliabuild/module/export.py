"""`heliabuild module`: a model and its AOT plan exported as a self-contained folder a firmware links
(docs/module.md).

    export_module(model, plan, output, layout="cmake") -> ModuleExport

The folder holds:

    include/<prefix>_model.h    the public API: init, run, the input and output descriptors, the arena's
                                size and alignment, the version string
    include/helia_model.h, helia_module.h, helia_status.h
    src/<prefix>_model.c        the generated module (heliabuild.codegen, with the export's sections)
    src/<prefix>_model_io.c     the descriptor tables and, for a plan that streams, the default copy hook
    src/<kernels>.c, .h         exactly the kernel sources the module calls (heliabuild.module.kernels)
    <prefix>_layout.json        the arena's offsets, the constants' placement, the schedule units
    README.md, LICENSE          what it is of and the flags it expects; the terms of its files
    module.json                 the manifest: every other file's SHA-256 and size (schemas/module.schema.json)
    + the layout's build files  (heliabuild.module.layouts)

The same model, plan and options give the same bytes in any folder. Every refusal (a model the generator
cannot admit, a plan of another model, an unknown layout, an output folder holding files that are not an
earlier export of ours) is one HeliaError before anything is written; the folder is replaced whole
(heliabuild.module.folder).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from heliabuild import __version__
from heliabuild.aot.records import load_plan
from heliabuild.codegen.emit import ModuleMemory, comment
from heliabuild.codegen.module import render_module
from heliabuild.files import json_text, sha256_bytes, sha256_file
from heliabuild.firmware import C_SOURCE_DIR
from heliabuild.module.folder import MANIFEST, earlier_export, publish
from heliabuild.module.kernels import KERNEL_SOURCE_DIR, ModuleError, kernel_sources
from heliabuild.module.layouts import DEFAULT_LAYOUT, check_layout, layout_files
from heliabuild.module.public import (
    ARENA_ALIGNMENT,
    Identity,
    descriptor_source,
    license_note,
    public_header,
    readme,
)
from heliabuild.paths import check_outputs

OWN_HEADER_DIR = Path(__file__).resolve().parent / "c"
PUBLIC_HEADERS = (("helia_model.h", C_SOURCE_DIR), ("helia_module.h", OWN_HEADER_DIR))
"""The fixed headers of the API, and where heliabuild keeps them (helia_status.h comes with the kernels)."""

SECTIONS = (
    (".rodata.helia.direct", "constants the plan reads in place (`direct`)"),
    (".rodata.helia.pin", "the stored image of constants copied at init (`pin`)"),
    (".bss.helia.pin.<memory>", "the copies of pinned constants, by the plan's destination memory (lower case)"),
    (".rodata.helia.stream", "the stored spans of the schedule units (`stream`)"),
    (".bss.helia.stream_pool", "the stream pool the units are copied into"),
)
"""The sections of an exported module (docs/module.md, "Memory placement"); a default GNU linker script puts
`.rodata.*` with the read-only data and `.bss.*` with the zeroed data, and a script of your own can place each."""

_SECTION_NAME = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_.$-]*")


@dataclass(frozen=True)
class ModuleExport:
    """The folder written, its layout and its manifest (the document of module.json)."""

    folder: Path
    layout: str
    manifest: dict[str, object]


def export_memory(prefix: str, arena_section: str | None) -> ModuleMemory:
    """The sections of an exported module (SECTIONS), its arena (`<prefix>_model_arena`: the caller's, or in
    `arena_section`) and its copy hook (`<prefix>_model_copy`)."""
    if arena_section is not None and not _SECTION_NAME.fullmatch(arena_section):
        raise ModuleError(
            f"arena section {arena_section!r} is not a section name (letters, digits, '_', '.', '-', '$')"
        )
    return ModuleMemory(
        direct=".rodata.helia.direct",
        pin=".rodata.helia.pin",
        stream=".rodata.helia.stream",
        pinned=None,
        stream_pool=".bss.helia.stream_pool",
        arena_section=arena_section,
        arena_symbol=f"{prefix}_model_arena",
        copy=f"{prefix}_model_copy",
    )


def compiler_flags() -> list[str]:
    """The flags the kernels are built and qualified with (heliabuild.firmware.toolchain)."""
    from heliabuild.firmware.toolchain import C_FLAGS, CPU_FLAGS

    return [*CPU_FLAGS, *C_FLAGS]


def _includes(source: bytes) -> list[str]:
    return re.findall(r'^#include "([^"]+)"', source.decode("utf-8"), flags=re.MULTILINE)


def render_export(
    model: str | os.PathLike[str],
    plan: str | os.PathLike[str],
    *,
    layout: str = DEFAULT_LAYOUT,
    prefix: str | None = None,
    arena_section: str | None = None,
) -> dict[str, bytes]:
    """Every file of the export (relative path -> bytes), module.json included; nothing is written."""
    check_layout(layout)
    prefix = prefix if prefix is not None else load_plan(plan).module_prefix
    memory = export_memory(prefix, arena_section)
    rendered = render_module(model, plan, prefix, memory=memory)
    generated_c = rendered.files[f"{prefix}_model.c"]
    identity = Identity(
        prefix=prefix,
        model_sha256=rendered.model_sha256,
        plan_sha256=sha256_file(plan),
        model_name=comment(Path(model).name),
        plan_name=comment(Path(plan).name),
    )
    streams = bool(rendered.layout.units)
    kernels = kernel_sources(rendered.calls, _includes(generated_c))
    files: dict[str, bytes] = {
        f"include/{prefix}_model.h": public_header(identity, rendered.model, rendered.layout, arena_section, streams),
        f"src/{prefix}_model.c": generated_c,
        f"src/{prefix}_model_io.c": descriptor_source(identity, rendered.model, rendered.layout, streams),
        f"{prefix}_layout.json": rendered.files[f"{prefix}_layout.json"],
    }
    for name, folder in PUBLIC_HEADERS:
        files[f"include/{name}"] = (folder / name).read_bytes()
    for name in (*kernels.sources, *kernels.headers):
        public = name == "helia_status.h"  # helia_model.h includes it
        files[f"{'include' if public else 'src'}/{name}"] = (KERNEL_SOURCE_DIR / name).read_bytes()
    sources = sorted(name for name in files if name.endswith(".c"))
    generated = [f"include/{prefix}_model.h", f"src/{prefix}_model.c", f"src/{prefix}_model_io.c"]
    build = layout_files(layout, identity, sources, sorted(files))
    files.update(build)
    generated += list(build)
    files["LICENSE"] = license_note(identity, [*generated, f"{prefix}_layout.json", "README.md", MANIFEST])
    files["README.md"] = readme(
        identity, layout, rendered.layout, arena_section, compiler_flags(), sorted([*files, "README.md"]), SECTIONS
    )
    manifest = {
        "format": "heliabuild-module/1",
        "heliabuild": __version__,
        "prefix": prefix,
        "layout": layout,
        "model": {"name": identity.model_name, "sha256": identity.model_sha256},
        "plan": {"name": identity.plan_name, "sha256": identity.plan_sha256},
        "arena": {"bytes": max(rendered.layout.arena.size, 16), "alignment": ARENA_ALIGNMENT, "section": arena_section},
        "compiler_flags": compiler_flags(),
        "files": {name: {"sha256": sha256_bytes(data), "bytes": len(data)} for name, data in sorted(files.items())},
    }
    files[MANIFEST] = json_text(manifest).encode("utf-8")
    return dict(sorted(files.items()))


def export_module(
    model: str | os.PathLike[str],
    plan: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    layout: str = DEFAULT_LAYOUT,
    prefix: str | None = None,
    arena_section: str | None = None,
) -> ModuleExport:
    """Write the export of `model` and its `plan` as the folder `output` (module docstring). `prefix` defaults
    to the plan's module prefix; `arena_section` None leaves the arena to the caller."""
    check_layout(layout)
    folder = Path(output)
    check_outputs([("module folder", folder)], [("model", Path(model)), ("plan", Path(plan))])
    earlier = earlier_export(folder)
    files = render_export(model, plan, layout=layout, prefix=prefix, arena_section=arena_section)
    publish(folder, files, earlier)
    return ModuleExport(folder=folder, layout=layout, manifest=json.loads(files[MANIFEST].decode("utf-8")))
