"""The remote build cache end to end: real SCons, real Vela and LiteRT, Debian's nginx with WebDAV PUT.

Each project is one synthetic KWS chain pipeline (synth, fence, Vela, AOT plan, runner, run on LiteRT) in
its own folder, a checkout; `--helia-cache-url` points every checkout at one nginx on 127.0.0.1
(tests/helpers/nginx.py). Stages are counted from the `heliabuild: <stage> <target>` lines a build prints.
The result bundle holds measurements and is never cached (NoCache), so its run stage runs in every
checkout; every other file is cacheable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.nginx import Nginx, free_port, running_nginx
from test_scons import SITE_TOOLS, heliabuild_lines, output_of, scons_command
from test_scons_pipeline import snapshot

from heliabuild.cache.layout import CacheEntry
from heliabuild.files import sha256_bytes
from heliabuild.scons.summary import SUMMARY_FILES

pytestmark = pytest.mark.slow

SCONSTRUCT = """\
SetOption("hash_format", "sha256")
if ARGUMENTS.get("local_cache"):
    CacheDir(ARGUMENTS["local_cache"])
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain", HELIA_SYNTH_SEED=0)
env.HeliaPipeline("kws", model, fences=[3, 6], build_dir="build", backend=ARGUMENTS.get("backend", "litert"))
"""
STAGE_LINES = {
    "heliabuild: synth kws.tflite",
    "heliabuild: fence build/kws_fenced.tflite",
    "heliabuild: vela build/kws_fenced_vela.tflite",
    "heliabuild: aot-plan build/kws_plan.json",
    "heliabuild: runner build/runner/kws/runner.json",
    "heliabuild: run build/results/kws/result.json",
}
RUN_LINE = "heliabuild: run build/results/kws/result.json"
CACHEABLE_FILES = 13
"""The pipeline's files but its result bundle: model, fence (2), Vela (4), AOT plan (2), runner (4)."""
PREFIX = "team"
WARNING = "heliabuild: warning: remote cache"


def checkout(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(SCONSTRUCT.format(site_tools=str(SITE_TOOLS)), encoding="utf-8")
    return folder


def scons(project: Path, *arguments: str, **environment: str) -> subprocess.CompletedProcess[str]:
    variables = {key: value for key, value in os.environ.items() if not key.startswith(("SCONSFLAGS", "HELIA_"))}
    return subprocess.run(
        [*scons_command(), *arguments],
        cwd=project,
        env={**variables, **environment},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def built(project: Path, *arguments: str, **environment: str) -> subprocess.CompletedProcess[str]:
    result = scons(project, *arguments, **environment)
    assert result.returncode == 0, output_of(result)
    return result


def stage_lines(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {line for line in heliabuild_lines(result, "heliabuild: ") if line.split(" ")[1] != "warning:"}


def cache_warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in output_of(result).splitlines() if line.startswith(WARNING)]


def cacheable(project: Path) -> dict[str, bytes]:
    """The built files of `project` that a cache holds, by path: all but the result bundle and the build's
    summary of it (written after the build, not a target: heliabuild.scons.summary.SUMMARY_FILES)."""
    files = snapshot(project)
    return {
        name: data
        for name, data in files.items()
        if (name == "kws.tflite" or name.startswith("build/"))
        and not name.startswith("build/results/")
        and name not in SUMMARY_FILES
    }


def retrieved(result: subprocess.CompletedProcess[str], where: str = "remote cache") -> list[str]:
    suffix = f"' from {where}"
    return sorted(
        line.removeprefix("Retrieved `").removesuffix(suffix)
        for line in result.stdout.splitlines()
        if line.startswith("Retrieved `") and line.endswith(suffix)
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    with running_nginx(tmp_path_factory.mktemp("nginx")) as started:
        yield started


@pytest.fixture(scope="module")
def filled(server: Nginx, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The first checkout, built with the (empty) cache under /team: (project, result)."""
    project = checkout(tmp_path_factory.mktemp("first") / "project")
    return project, built(project, f"--helia-cache-url={server.url}/{PREFIX}")


def test_a_first_checkout_builds_every_stage_and_fills_the_cache(
    server: Nginx, filled: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    project, result = filled
    assert stage_lines(result) == STAGE_LINES, output_of(result)
    assert cache_warnings(result) == [] and retrieved(result) == []
    files = cacheable(project)
    assert len(files) == CACHEABLE_FILES, sorted(files)
    assert server.files("cas", PREFIX) == {sha256_bytes(data): data for data in files.values()}
    entries = [CacheEntry.from_json(json.loads(data), "ac") for data in server.files("ac", PREFIX).values()]
    assert sorted(entry.path for entry in entries) == sorted(files)
    assert all(entry.sha256 == sha256_bytes(files[entry.path]) for entry in entries)
    assert all(entry.size == len(files[entry.path]) for entry in entries)


def test_a_second_checkout_fetches_every_cacheable_file_and_runs_no_stage(
    server: Nginx, filled: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _ = filled
    before = (server.files("cas", PREFIX), server.files("ac", PREFIX))
    project = checkout(tmp_path / "elsewhere" / "project")
    result = built(project, f"--helia-cache-url={server.url}/{PREFIX}")
    assert stage_lines(result) == {RUN_LINE}, output_of(result)  # the measurement is never cached
    assert retrieved(result) == sorted(cacheable(reference))
    assert cacheable(project) == cacheable(reference)
    assert cache_warnings(result) == []
    assert (server.files("cas", PREFIX), server.files("ac", PREFIX)) == before

    again = built(project, f"--helia-cache-url={server.url}/{PREFIX}")
    assert stage_lines(again) == set() and retrieved(again) == [], output_of(again)


def test_a_local_cachedir_with_the_server_is_filled_from_it_and_serves_the_next_checkout(
    server: Nginx, filled: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _ = filled
    local = tmp_path / "local-cache"
    first = checkout(tmp_path / "first")
    result = built(first, f"--helia-cache-url={server.url}/{PREFIX}", f"local_cache={local}")
    assert retrieved(result) == sorted(cacheable(reference)), output_of(result)
    second = checkout(tmp_path / "second")
    result = built(second, f"local_cache={local}")  # no server: the local CacheDir alone
    assert retrieved(result, "cache") == sorted(cacheable(reference)), output_of(result)
    assert stage_lines(result) == {RUN_LINE}
    assert cacheable(second) == cacheable(reference)


def test_the_environment_variable_gives_the_url_and_the_option_wins(
    server: Nginx, filled: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _ = filled
    url = f"{server.url}/{PREFIX}"
    from_variable = built(checkout(tmp_path / "variable"), HELIA_CACHE_URL=url)
    assert retrieved(from_variable) == sorted(cacheable(reference)), output_of(from_variable)
    option_wins = built(checkout(tmp_path / "option"), f"--helia-cache-url={url}", HELIA_CACHE_URL="ftp://wrong")
    assert retrieved(option_wins) == sorted(cacheable(reference)), output_of(option_wins)
    turned_off = built(checkout(tmp_path / "off"), "--helia-cache-url=", HELIA_CACHE_URL=url)
    assert retrieved(turned_off) == [] and stage_lines(turned_off) == STAGE_LINES, output_of(turned_off)


@pytest.mark.parametrize(
    ("arguments", "environment", "problem"),
    [
        (
            ["--helia-cache-url=ftp://host/cache"],
            {},
            "heliabuild: --helia-cache-url: 'ftp://host/cache' is not an http:// or https:// URL with a host "
            "(hint: give http://host:port/prefix)",
        ),
        (
            [],
            {"HELIA_CACHE_URL": "http://host:http/cache"},
            "heliabuild: HELIA_CACHE_URL: 'http://host:http/cache' is not a URL: Port could not be cast",
        ),
        (
            ["--helia-cache-url=http://host/cache"],
            {"HELIA_CACHE_TIMEOUT": "soon"},
            "heliabuild: HELIA_CACHE_TIMEOUT: 'soon' is not a positive number of seconds",
        ),
    ],
    ids=["scheme", "port", "timeout"],
)
def test_a_bad_cache_configuration_is_one_error_before_anything_is_built(
    tmp_path: Path, arguments: list[str], environment: dict[str, str], problem: str
) -> None:
    project = checkout(tmp_path / "project")
    result = scons(project, *arguments, **environment)
    assert result.returncode == 2, output_of(result)
    assert f"scons: *** {problem}" in result.stderr, result.stderr
    assert "Traceback" not in output_of(result)
    assert not (project / "build").exists() and not (project / "kws.tflite").exists()


@pytest.mark.parametrize(
    ("where", "environment", "reason"),
    [
        ("failing", {}, "GET /failing/ac/"),
        ("slow", {"HELIA_CACHE_TIMEOUT": "1"}, "GET /slow/ac/"),
        ("unreachable", {}, "Connection refused"),
    ],
)
def test_a_failing_server_degrades_to_a_local_build_with_one_warning(
    server: Nginx,
    filled: tuple[Path, subprocess.CompletedProcess[str]],
    tmp_path: Path,
    where: str,
    environment: dict[str, str],
    reason: str,
) -> None:
    reference, _ = filled
    url = f"http://127.0.0.1:{free_port()}/cache" if where == "unreachable" else f"{server.url}/{where}"
    project = checkout(tmp_path / "project")
    result = built(project, "-j2", f"--helia-cache-url={url}", **environment)
    assert stage_lines(result) == STAGE_LINES, output_of(result)
    warnings = cache_warnings(result)
    assert len(warnings) == 1, output_of(result)
    assert warnings[0].startswith(f"{WARNING} {url}: ") and reason in warnings[0], warnings
    assert cacheable(project) == cacheable(reference)


def test_a_server_killed_mid_build_leaves_a_complete_local_build_and_one_warning(
    filled: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _ = filled
    with running_nginx(tmp_path / "server") as server:
        project = checkout(tmp_path / "project")
        variables = {key: value for key, value in os.environ.items() if not key.startswith(("SCONSFLAGS", "HELIA_"))}
        build = subprocess.Popen(
            [*scons_command(), f"--helia-cache-url={server.url}/{PREFIX}"],
            cwd=project,
            env=variables,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not server.files("cas", PREFIX) and build.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        os.killpg(server.process.pid, signal.SIGKILL)  # the first built file is stored: the server dies
        stdout, stderr = build.communicate(timeout=180)
        stored = server.files("cas", PREFIX)
    result = subprocess.CompletedProcess(build.args, build.returncode, stdout, stderr)
    assert result.returncode == 0, output_of(result)
    assert 1 <= len(stored) < len(set(cacheable(reference).values()))
    assert stage_lines(result) == STAGE_LINES
    warnings = cache_warnings(result)
    assert len(warnings) == 1 and "Connection refused" in warnings[0], output_of(result)
    assert cacheable(project) == cacheable(reference)


def test_a_tampered_entry_is_ignored_with_a_warning_rebuilt_and_repaired(
    filled: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _ = filled
    with running_nginx(tmp_path / "server") as server:
        url = f"--helia-cache-url={server.url}/{PREFIX}"
        built(checkout(tmp_path / "first"), url)
        fenced = cacheable(reference)["build/kws_fenced.tflite"]
        blob = server.root / PREFIX / "cas" / sha256_bytes(fenced)
        tampered = bytearray(blob.read_bytes())
        tampered[len(tampered) // 2] ^= 0x01
        blob.write_bytes(bytes(tampered))

        project = checkout(tmp_path / "second")
        result = built(project, url)
        repaired = blob.read_bytes()
    warnings = cache_warnings(result)
    assert len(warnings) == 1, output_of(result)
    assert warnings[0].startswith(
        f"{WARNING}: build/kws_fenced.tflite: {server.url}/{PREFIX}/cas/{sha256_bytes(fenced)}"
    )
    assert "not the content its key names; the entry is ignored and the file built here" in warnings[0]
    # the fence stage ran again (both of its files), everything after it came from the cache again
    assert stage_lines(result) == {"heliabuild: fence build/kws_fenced.tflite", RUN_LINE}, output_of(result)
    expected = set(cacheable(reference)) - {"build/kws_fenced.tflite", "build/kws_fenced.fenced_boundaries.json"}
    assert retrieved(result) == sorted(expected)
    assert cacheable(project) == cacheable(reference)
    assert repaired == fenced  # the file built here was stored over the corrupted content


def test_a_qemu_pipelines_firmware_is_fetched_too(tmp_path: Path) -> None:
    """The firmware library, objects and ELF are built in their own cross environment, which takes the
    remote cache from the pipeline's environment: a second checkout compiles and links nothing."""
    require_firmware_tools()
    with running_nginx(tmp_path / "server") as server:
        arguments = (f"--helia-cache-url={server.url}/{PREFIX}", "backend=qemu-m55")
        first = checkout(tmp_path / "first")
        filling = built(first, *arguments)
        assert any(line.startswith("heliabuild: firmware-link ") for line in stage_lines(filling))
        second = checkout(tmp_path / "second")
        result = built(second, *arguments)
    assert stage_lines(result) == {RUN_LINE}, output_of(result)
    assert retrieved(result) == sorted(cacheable(first))
    assert "build/heliabuild-firmware/mps3_an547/libheliafirmware.a" in retrieved(result)
    assert cacheable(second) == cacheable(first)
    elf = Path("build/runner/kws.firmware/firmware.elf")
    assert (second / elf).stat().st_mode == (first / elf).stat().st_mode  # the mode comes back as stored
    assert cache_warnings(result) == []


def test_an_sconstruct_can_name_the_server_itself(server: Nginx, tmp_path: Path) -> None:
    """docs/remote-cache.md: `env.CacheDir(None, remote_cache_class(url))`, the server alone, no option."""
    sconstruct = (
        "from heliabuild.scons.remote_cache import remote_cache_class\n"
        f"env = Environment(tools=['helia'], toolpath=[{str(SITE_TOOLS)!r}])\n"
        f"env.CacheDir(None, remote_cache_class({server.url + '/own'!r}))\n"
        "env.HeliaSynth('kws.tflite', HELIA_SYNTH_KIND='chain', HELIA_SYNTH_SEED=1)\n"
    )
    results = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SConstruct").write_text(sconstruct, encoding="utf-8")
        results.append(built(tmp_path / name))
    assert stage_lines(results[0]) == {"heliabuild: synth kws.tflite"} and retrieved(results[0]) == []
    assert stage_lines(results[1]) == set() and retrieved(results[1]) == ["kws.tflite"], output_of(results[1])
    assert (tmp_path / "second" / "kws.tflite").read_bytes() == (tmp_path / "first" / "kws.tflite").read_bytes()
    assert len(server.files("ac", "own")) == 1
