"""The fvp backend's second firmware: heliabuild's AOT firmware of Vela's output for the Corstone-300 FVP,
linked for real with arm-none-eabi-gcc against a TEST DOUBLE of Arm's Ethos-U core driver
(tests/helpers/ethosu_driver_test_double/, which drives no NPU), run for real on QEMU's mps3-an547 (Corstone-300's
CPU and memory map; UART0 is where the FVP's is) to capture its record stream, which a FAKE FVP
(tests/helpers/fake_fvp.py, a test double of Arm's FVP executables) replays to the adapter."""

from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.fvp_models import compiled_residual as _compiled
from helpers.qemu_uart import uart_until_eot

from heliabuild.aot.stage import write_plan
from heliabuild.api import acquisition_facts, load_result
from heliabuild.errors import FirmwareError, FvpError
from heliabuild.files import sha256_file
from heliabuild.firmware.records import read_records
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.lifecycle import run_runner

DRIVER_DOUBLE = Path(__file__).parent / "helpers" / "ethosu_driver_test_double"
POLICY = {"defaults": {"fvp": {"acquisition": {"state": "carry", "warmup_invokes": 1, "measured_invokes": 2}}}}


@pytest.fixture(autouse=True)
def _tools(firmware_library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))  # one library per session
    monkeypatch.delenv("HELIA_ETHOSU_DRIVER_DIR", raising=False)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The residual network fenced into three segments, Vela's output for ethos-u55-128, and its AOT plan for
    corstone300_ethos_u55."""
    inputs = dict(_compiled(tmp_path_factory, "ethos-u55-128"))
    folder = tmp_path_factory.mktemp("aot-plan")
    inputs["plan"] = write_plan(inputs["vela"], folder, "model", "corstone300_ethos_u55").plan
    return inputs


def _build(out: Path, inputs: dict[str, Path], **options: object) -> Path:
    return build_runner(
        out,
        model=inputs["model"],
        policy=POLICY,
        sidecar=inputs["sidecar"],
        vela_model=inputs["vela"],
        segments=inputs["segments"],
        aot_plan=inputs["plan"],
        backend="fvp",
        fvp_firmware="aot",
        **options,
    )


def test_without_a_driver_folder_the_build_is_one_clear_error(tmp_path: Path, compiled: dict[str, Path]) -> None:
    with pytest.raises(FirmwareError) as error:
        _build(tmp_path / "runner", compiled)
    assert "calls Arm's Ethos-U core driver, and no driver folder is named" in error.value.message
    assert "HELIA_ETHOSU_DRIVER_DIR is not set" in error.value.message
    assert not (tmp_path / "runner").exists()


def test_a_driver_folder_lacking_files_is_one_error_naming_them(tmp_path: Path, compiled: dict[str, Path]) -> None:
    folder = tmp_path / "driver"
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "ethosu_driver.h").write_text("/* a header */\n")
    with pytest.raises(FirmwareError) as error:
        _build(tmp_path / "runner", compiled, ethosu_driver_dir=folder)
    assert error.value.message.endswith(
        "is not an Ethos-U core driver for ethos-u55: it lacks include/pmu_ethosu.h, src/ethosu_driver.c, "
        "src/ethosu_pmu.c, src/ethosu_device_u55_u65.c"
    )
    assert not (tmp_path / "runner").exists()


def test_corstone_310_is_refused_by_name(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    inputs = dict(_compiled(tmp_path_factory, "ethos-u55-64"))
    with pytest.raises(FvpError, match="built for corstone-300 only; corstone-310's memory map"):
        build_runner(
            tmp_path / "runner",
            model=inputs["model"],
            policy=POLICY,
            vela_model=inputs["vela"],
            segments=inputs["segments"],
            backend="fvp",
            fvp_target="corstone-310",
            fvp_firmware="aot",
            ethosu_driver_dir=DRIVER_DOUBLE,
        )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, compiled: dict[str, Path]) -> tuple[Path, Path]:
    """The runner with the AOT firmware linked against the driver double, and its UART record stream."""
    runner_json = _build(tmp_path_factory.mktemp("aot") / "runner", compiled, ethosu_driver_dir=DRIVER_DOUBLE)
    uart = uart_until_eot(runner_json.parent / "fvp" / "firmware.elf")
    records = runner_json.parent.parent / "uart.txt"
    records.write_text(uart, encoding="ascii")
    return runner_json, records


def test_the_firmware_compiles_links_and_runs_its_whole_lifecycle(
    built: tuple[Path, Path], compiled: dict[str, Path]
) -> None:
    runner_json, records = built
    runner = load_runner(runner_json)
    firmware = runner.document["fvp"]["firmware"]
    assert firmware["source"] == "heliabuild-aot" and firmware["target"] == "corstone300"
    assert firmware["driver"]["define"] == "ETHOSU55" and "ethosu_device_u85.c" not in firmware["driver"]["sources"]
    elf = runner_json.parent / firmware["elf"]["file"]
    assert elf.read_bytes()[:4] == b"\x7fELF" and sha256_file(elf) == firmware["elf"]["sha256"]
    assert runner.document["fvp"]["command"][:3] == ["<fvp>", "-a", "<application>"]  # no --data: it holds its model
    assert os.fspath(DRIVER_DOUBLE) not in runner_json.read_text()  # the driver by hash, not by path

    text = records.read_text()
    stream = read_records(text, "uart")
    assert [r.kind for r in stream.records] == [
        "begin",
        "npu_sample",
        "output",
        "npu_sample",
        "output",
        "receipt",
        "end",
    ]
    assert stream.records[0].fields[8].hex() == sha256_file(compiled["vela"])  # it runs Vela's model
    # one command stream per segment, counted in the driver's hooks, read by the event each counter was programmed
    # with (the driver double): NPU_ACTIVE 1000 cycles, then AXI0 read 200, AXI0 write 30 and AXI1 read 4 beats
    assert stream.records[1].fields == (0, 4, *(1, 0, 1000, 200, 30, 4) * 3)
    assert "Application exit code: 0.\n\x04" in text


@pytest.fixture
def replaying(built: tuple[Path, Path], fake_fvp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The runner, with the FAKE FVP on PATH replaying its firmware's record stream; returns the call log."""
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(built[1]))
    return fake_fvp


@pytest.mark.parametrize("tag", ["1", "0"], ids=["exitthesim-after-eot", "nothing-after-eot"])
def test_good_run_on_the_fake_fvp_publishes_per_segment_counters(
    tmp_path: Path, built: tuple[Path, Path], replaying: Path, monkeypatch: pytest.MonkeyPatch, tag: str
) -> None:
    """The core-platform ending (`Application exit code: 0.`, EOT), with or without the `EXITTHESIM` tag after
    the EOT (the FVP stops at the EOT and may or may not pass on what follows)."""
    monkeypatch.setenv("FAKE_FVP_CODE_BYTE", tag)
    runner_json = built[0]
    result_json = run_runner(runner_json, tmp_path / "result")
    result = load_result(result_json.parent)  # the reader verifies the bundle
    assert [s.cycles for s in result.samples] == [{"total": 3000, "segments": [1000, 1000, 1000]}] * 2
    assert [s.segment_traffic_beats for s in result.samples] == [[234, 234, 234]] * 2
    assert [s.traffic_beats for s in result.samples] == [702, 702]
    assert all(s.sanity == {"outputs_finite": True, "counter_overflow": False} for s in result.samples)
    facts = acquisition_facts(result)
    assert facts is not None
    assert (facts.state, facts.warmup_invokes, facts.measured_invokes) == ("carry", 1, 2)
    assert facts.initialization == "before_measurement" and facts.counter_scope == "npu_callbacks"
    document = json.loads(result_json.read_text())
    assert document["runtime"] == "aot" and document["scopes"]["cycles"] == "npu_callbacks"
    assert document["provider_versions"]["FVP_Corstone_SSE-300_Ethos-U55"] == "11.27.25"  # fake_fvp.VERSION
    calls = [json.loads(line) for line in replaying.read_text().splitlines()]
    jobs = [call for call in calls if call[1:] != ["--version"]]
    assert len(jobs) == 1 and "--data" not in jobs[0]  # one job, the whole lifecycle


def test_bad_checksum_is_one_clear_error_with_nothing_published(
    tmp_path: Path, built: tuple[Path, Path], replaying: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FVP_SCENARIO", "bad-checksum")
    with pytest.raises(FirmwareError, match=r"line [0-9]+: record fails its checksum"):
        run_runner(built[0], tmp_path / "result")
    assert not (tmp_path / "result").exists()


@pytest.mark.parametrize(
    ("scenario", "message", "kept"),
    [
        ("exit-1", "the FVP exited with status 1 after a complete log", False),
        ("cut", "the UART log holds no EOT (0x04): the firmware did not end", True),
    ],
)
def test_a_failed_aot_job_is_one_error_with_nothing_published(
    tmp_path: Path,
    built: tuple[Path, Path],
    replaying: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
    message: str,
    kept: bool,
) -> None:
    monkeypatch.setenv("FAKE_FVP_SCENARIO", scenario)
    with pytest.raises(FvpError) as caught:
        run_runner(built[0], tmp_path / "result")
    assert message in caught.value.message and "\n" not in caught.value.message
    assert not (tmp_path / "result").exists()
    logs = list(tmp_path.glob("result.failed-*/firmware.uart.log"))
    assert len(logs) == int(kept)
    if kept:
        assert caught.value.message.endswith(f"; the UART log is kept in {logs[0]}")
        assert logs[0].read_bytes().startswith(b"@hb1 0 begin ")


def _rewritten(records: Path, seq: int, fields: list[int], out: Path) -> Path:
    """`records` with record `seq`'s integer fields replaced by `fields`, its checksum made right again."""
    lines = records.read_text().splitlines()
    index = next(k for k, line in enumerate(lines) if line.startswith(f"@hb1 {seq} "))
    kind = lines[index].split(" ")[2]
    body = f"@hb1 {seq} {kind} {' '.join(map(str, fields))} "
    lines[index] = f"{body}*{zlib.crc32(body.encode()):08x}"
    out.write_text("\n".join(lines) + "\n", encoding="ascii")
    return out


def test_an_overflowed_counter_is_flagged_never_published(
    tmp_path: Path, built: tuple[Path, Path], replaying: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # segment 1 of sample 0 reports an overflowed counter: that sample's counts are null, the flag set
    fields = [0, 4, 1, 0, 1000, 2000, 3000, 4000, 1, 1, 1000, 2000, 3000, 4000, 1, 0, 1000, 2000, 3000, 4000]
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(_rewritten(built[1], 1, fields, tmp_path / "uart.txt")))
    result = load_result(run_runner(built[0], tmp_path / "result").parent)
    first, second = result.samples
    assert (first.cycles, first.traffic_beats, first.segment_traffic_beats) == (None, None, None)
    assert first.sanity == {"outputs_finite": True, "counter_overflow": True}
    assert second.cycles == {"total": 3000, "segments": [1000, 1000, 1000]}


def test_a_sample_for_another_segment_count_is_refused(
    tmp_path: Path, built: tuple[Path, Path], replaying: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fields = [0, 4, 1, 0, 1000, 2000, 3000, 4000, 1, 0, 1000, 2000, 3000, 4000]  # two segments, not three
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(_rewritten(built[1], 1, fields, tmp_path / "uart.txt")))
    with pytest.raises(FirmwareError, match=r"record 1 \(npu_sample\) has 14 fields, expected 20"):
        run_runner(built[0], tmp_path / "result")
    assert not (tmp_path / "result").exists()


def test_cli_builds_the_aot_firmware_for_the_u65(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from heliabuild.cli import main

    inputs = _compiled(tmp_path_factory, "ethos-u65-256")
    plan = write_plan(inputs["vela"], tmp_path / "plan", "model", "corstone300_ethos_u65").plan
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    arguments = ["runner", "--model", str(inputs["model"]), "--sidecar", str(inputs["sidecar"])]
    arguments += ["--vela-model", str(inputs["vela"]), "--segments", str(inputs["segments"]), "--policy", str(policy)]
    arguments += ["--aot-plan", str(plan), "--backend", "fvp", "--fvp-target", "corstone-300", "--fvp-firmware", "aot"]
    assert main([*arguments, "-o", str(tmp_path / "missing")]) == 2  # no driver: one error line, nothing written
    err = capsys.readouterr().err
    assert err.count("heliabuild: error:") == 1 and "HELIA_ETHOSU_DRIVER_DIR is not set" in err
    assert not (tmp_path / "missing").exists()

    monkeypatch.setenv("HELIA_ETHOSU_DRIVER_DIR", str(DRIVER_DOUBLE))  # the environment variable names it too
    assert main([*arguments, "-o", str(tmp_path / "runner")]) == 0
    document = json.loads((tmp_path / "runner" / "runner.json").read_text())
    assert document["fvp"]["target"]["executable"] == "FVP_Corstone_SSE-300_Ethos-U65"
    assert document["fvp"]["firmware"]["driver"]["define"] == "ETHOSU65"
    assert "ethosu.num_macs=256" in document["fvp"]["command"]


def test_a_rebuild_elsewhere_gives_the_same_bytes(
    tmp_path: Path, built: tuple[Path, Path], compiled: dict[str, Path]
) -> None:
    driver = tmp_path / "elsewhere" / "driver"
    shutil.copytree(DRIVER_DOUBLE, driver)
    again = _build(tmp_path / "other" / "runner", compiled, ethosu_driver_dir=driver)
    for name in ("runner.json", "fvp/firmware.elf", "fvp/firmware_layout.json"):
        assert (again.parent / name).read_bytes() == (built[0].parent / name).read_bytes(), name
