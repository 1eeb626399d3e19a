"""The build files of the zephyr and cmsis-pack layouts, checked against the fields their documentation
requires (neither Zephyr's build nor a CMSIS pack tool can be installed here, so neither is built; the plain
and cmake layouts are built for real in tests/test_module_build.py).

Sources of the rules (read, not copied):
- Zephyr, scripts/zephyr_module.py, METADATA_SCHEMA (the pykwalify schema every zephyr/module.yml is validated
  against): top-level keys `name` (str), `build` (map), `samples`, `tests`, `boards`, `blobs`, `security`,
  `package-managers`; `build` keys `cmake` (str, a folder holding CMakeLists.txt, default `zephyr`), `kconfig`
  (str, a file, default `zephyr/Kconfig`), `cmake-ext`, `kconfig-ext` (bool), `sysbuild-*`, `depends` (seq),
  `settings` (map); paths relative to the module root (doc/guides/modules.rst, "Build files").
- Open-CMSIS-Pack, schema/PACK.xsd 1.7.32: `package` requires attribute `schemaVersion` and the children
  `name` and `vendor` (RestrictedString `[-_A-Za-z0-9]+`), `description`, `url` (may be empty), `releases`;
  a `component` requires attributes `Cclass`, `Cgroup`, `Cversion` and the children `description` and `files`;
  a `file` requires `category` (FileCategoryType, below; `sourceC`, `sourceCpp` and `sourceAsm` deprecated
  since 1.7.15) and `name`; the description file is named `<vendor>.<name>.pdsc` (packFormat.html, "Filename
  Conventions").
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import yaml

from heliabuild.aot.stage import write_plan
from heliabuild.model import save_model
from heliabuild.module.export import export_module
from heliabuild.synth import synthesize

ZEPHYR_TOP_KEYS = {"name", "build", "samples", "tests", "boards", "blobs", "security", "package-managers"}
ZEPHYR_BUILD_KEYS = {
    "cmake",
    "kconfig",
    "cmake-ext",
    "kconfig-ext",
    "sysbuild-cmake",
    "sysbuild-kconfig",
    "sysbuild-cmake-ext",
    "sysbuild-kconfig-ext",
    "depends",
    "settings",
}
PACK_FILE_CATEGORIES = {
    "doc",
    "header",
    "include",
    "library",
    "object",
    "source",
    "linkerScript",
    "utility",
    "image",
    "other",
    "preIncludeGlobal",
    "preIncludeLocal",
    "genSource",
    "genHeader",
    "genParams",
    "genAsset",
}  # fmt: skip  (FileCategoryType of PACK.xsd 1.7.32 without its deprecated entries)
RESTRICTED_STRING = re.compile(r"[-_A-Za-z0-9]+")


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("layouts")
    model = folder / "kws.tflite"
    save_model(synthesize("chain", seed=0), model)
    write_plan(model, folder, "kws", "mps3_an547")
    return {
        layout: export_module(model, folder / "kws_plan.json", folder / layout, layout=layout).folder
        for layout in ("zephyr", "cmsis-pack")
    }


def test_the_zephyr_module_yml_has_the_documented_fields(exports: dict[str, Path]) -> None:
    root = exports["zephyr"]
    document = yaml.safe_load((root / "zephyr" / "module.yml").read_text())
    assert set(document) <= ZEPHYR_TOP_KEYS
    assert isinstance(document["name"], str) and re.fullmatch(r"[A-Za-z0-9_-]+", document["name"])
    build = document["build"]
    assert set(build) <= ZEPHYR_BUILD_KEYS
    assert (root / build["cmake"] / "CMakeLists.txt").is_file()
    assert (root / build["kconfig"]).is_file()


def test_the_zephyr_build_files_name_every_source_and_the_kconfig_option(exports: dict[str, Path]) -> None:
    root = exports["zephyr"]
    cmake = (root / "zephyr" / "CMakeLists.txt").read_text()
    kconfig = (root / "zephyr" / "Kconfig").read_text()
    option = re.search(r"^config (\w+)$", kconfig, re.M)
    assert option is not None and f"if(CONFIG_{option[1]})" in cmake
    assert re.search(rf"^config {option[1]}\n\tbool \"[^\"]+\"\n\thelp\n", kconfig, re.M)
    listed = set(re.findall(r"\$\{ZEPHYR_CURRENT_MODULE_DIR\}/(src/\S+\.c)", cmake))
    assert listed == {p.relative_to(root).as_posix() for p in (root / "src").glob("*.c")}
    assert "zephyr_include_directories(${ZEPHYR_CURRENT_MODULE_DIR}/include)" in cmake


def test_the_pdsc_has_the_fields_pack_xsd_requires(exports: dict[str, Path]) -> None:
    root = exports["cmsis-pack"]
    (description,) = root.glob("*.pdsc")
    package = ElementTree.parse(description).getroot()
    assert package.tag == "package" and re.fullmatch(r"\d+\.\d+(\.\d+)?", package.attrib["schemaVersion"])
    for child in ("name", "vendor", "description", "url", "releases"):
        assert package.find(child) is not None, child
    vendor, name = package.findtext("vendor"), package.findtext("name")
    assert vendor and name and RESTRICTED_STRING.fullmatch(vendor) and RESTRICTED_STRING.fullmatch(name)
    assert description.name == f"{vendor}.{name}.pdsc"
    releases = package.findall("releases/release")
    assert releases and all(re.fullmatch(r"\d+\.\d+\.\d+", r.attrib["version"]) for r in releases)
    (component,) = package.findall("components/component")
    assert {"Cclass", "Cgroup", "Cversion"} <= set(component.attrib)
    assert component.findtext("description")
    files = component.findall("files/file")
    for file in files:
        assert file.attrib["category"] in PACK_FILE_CATEGORIES
        path = root / file.attrib["name"]
        assert path.is_dir() if file.attrib["name"].endswith("/") else path.is_file(), file.attrib["name"]
    listed = {f.attrib["name"] for f in files}
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix in (".c", ".h")}
    assert on_disk <= listed
    assert (root / package.findtext("license")).is_file()
