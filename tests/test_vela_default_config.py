"""Vela's warnings about its own defaults said once in heliabuild's words (heliabuild.vela.default_config), on
the warnings real Vela prints (tests/test_cli_vela.py and tests/test_scons_vela_in_process.py check the
printed line of a real compile)."""

from __future__ import annotations

from heliabuild.vela.default_config import explained

CONFIG = (
    "Warning: No configuration file specified. Using a default of "
    "['/opt/venvs/proj/lib/python3.11/site-packages/ethosu/config_files/Arm/vela.ini']. "
    "Compilation may be invalid or non-optimal."
)
SYSTEM = (
    "Warning: No system configuration specified. Using a default of Ethos_U55_High_End_Embedded. "
    "Compilation may be invalid or non-optimal."
)
MEMORY = "Warning: No memory mode specified. Using a default of Shared_Sram. Compilation may be invalid or non-optimal."
OTHER = "Warning (supported operators) RESIZE_NEAREST_NEIGHBOR is not supported"


def test_the_three_become_one_in_place_of_the_first_and_others_pass_through() -> None:
    (before, first, after) = explained([OTHER, CONFIG, SYSTEM, MEMORY, OTHER], "corstone300_ethos_u55")
    assert before == after == OTHER
    assert first.startswith(
        "Vela chose its own defaults for what was not given: the configuration file Arm/vela.ini, the system config "
        "Ethos_U55_High_End_Embedded, memory mode Shared_Sram (Vela's packaged files); its cycle and memory "
        "estimates are for that reference system, not for platform corstone300_ethos_u55; to choose, set "
        "system_config= and memory_mode="
    )
    assert "/opt/venvs/proj" not in first
    assert explained([OTHER, SYSTEM])[0] == OTHER


def test_only_the_defaults_vela_took_are_named() -> None:
    (only,) = explained([CONFIG])
    assert only.startswith("Vela chose its own defaults for what was not given: the configuration file Arm/vela.ini (")
    assert "not for your board" in only


def test_warnings_without_defaults_are_left_as_they_are() -> None:
    assert explained([OTHER, OTHER]) == [OTHER, OTHER]
    assert explained([]) == []
