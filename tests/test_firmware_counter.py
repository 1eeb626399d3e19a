"""The firmware's 64-bit SysTick reading (heliabuild/firmware/c/counter.c) is exact across a reload, also one
whose exception is still pending: the same C compiled for the host against a SIMULATED SysTick (a test double
of the Armv8-M SysTick and ICSR.PENDSTSET, tests/helpers/firmware/counter_host.c), every reading compared
with the simulated tick count. On QEMU the counter is exercised by tests/test_firmware_harness.py."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from heliabuild.firmware import C_SOURCE_DIR
from heliabuild.kernels.native import host_compiler

WRAP = 1 << 24
HOST_SOURCE = Path(__file__).parent / "helpers" / "firmware" / "counter_host.c"


@pytest.fixture(scope="module")
def simulated_read(tmp_path_factory: pytest.TempPathFactory):
    compiler = host_compiler()
    if compiler is None:
        pytest.fail("no host C compiler: heliabuild's native kernels need one as well")
    library = tmp_path_factory.mktemp("counter") / "counter_host.so"
    command = [compiler, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"]
    subprocess.run([*command, f"-I{C_SOURCE_DIR}", str(HOST_SOURCE), "-o", str(library)], check=True)
    function = ctypes.CDLL(str(library)).simulated_read
    function.restype = ctypes.c_uint64
    function.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)]

    def read(start: int, ticks_per_access: int) -> tuple[int, int]:
        expected = ctypes.c_uint64()
        return function(start, ticks_per_access, ctypes.byref(expected)), expected.value

    return read


def test_a_reload_just_before_the_value_is_read_with_its_exception_pending_counts(simulated_read) -> None:
    """The issue's window: `wraps` read, then the counter reloads, then CVR read while the exception waits."""
    reading, expected = simulated_read(WRAP, 1)
    assert expected >= WRAP
    assert reading == expected


@given(
    wraps=st.integers(0, 5),
    offset=st.integers(-8, 8),
    ticks_per_access=st.integers(0, 3),
)
@example(wraps=1, offset=0, ticks_per_access=1)
@example(wraps=1, offset=-2, ticks_per_access=0)
@example(wraps=0, offset=0, ticks_per_access=0)
def test_every_reading_near_a_reload_is_the_tick_count_at_the_value_read(
    simulated_read, wraps: int, offset: int, ticks_per_access: int
) -> None:
    start = max(0, wraps * WRAP + offset)
    reading, expected = simulated_read(start, ticks_per_access)
    assert reading == expected
