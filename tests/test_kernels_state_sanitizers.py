"""The integer LSTM and SVDF C kernels under AddressSanitizer and UBSan, as tests/test_kernels_int8_sanitizers.py
does it for the others: built with `-fsanitize=address,undefined -fno-sanitize-recover=all` and driven in a
subprocess over the random cases of test_kernels_state_m55 (numpy buffers of exactly the tensors' sizes), each
output compared with the regular host build's, plus saturating cases (every gate, the cell state and the SVDF's
int32 sums at their limits)."""

from __future__ import annotations

from pathlib import Path

from helpers.sanitizers import SanitizedBuilds
from test_kernels_int8_sanitizers import run_sanitized

DRIVER = """
import ctypes, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_kernels_state_m55 as cases
from heliabuild.kernels import lstm, svdf
from heliabuild.kernels.int8 import Quant
from heliabuild.synth.lstm import random_weights as lstm_weights

cases._first_invoke = lambda model, x: None  # LiteRT is not under test here
builds = {{"sanitized": {library!r}, "regular": {regular!r}}}
kernels = {{build: cases.Kernels(ctypes.CDLL(path)) for build, path in builds.items()}}
outputs = {{}}
for build, bound in kernels.items():
    bound.recorder = lambda call, build=build: outputs.__setitem__(build, call.arrays[-1])


def same(call, label):
    for bound in kernels.values():
        call(bound)
    assert len({{output.tobytes() for output in outputs.values()}}) == 1, label


cases_run = [(name, case, seed, number) for seed in range(3) for number in range(25)
             for name, case in (("lstm", cases.case_lstm), ("svdf", cases.case_svdf))]
for name, case, seed, number in cases_run:
    same(lambda k: case(k, np.random.default_rng([seed, number])), (name, seed, number))
count = len(cases_run)
for log2 in (-15, -9):
    input_w, recurrent_w, biases = lstm_weights(np.random.default_rng(-log2), 8, 6, 2**28)
    params = lstm.lstm_params(
        Quant(0.05, -128), Quant(0.03, 127), 2.0**log2, Quant(0.03, 127), [(w, 0.05) for w in input_w],
        [(u, 0.05) for u in recurrent_w], biases, 0.0,
    )
    x = np.full((2, 7, 8), 127, np.int8)
    same(lambda k: k.lstm(params, x, input_w, recurrent_w, np.full((2, 6), 127, np.int8),
                          np.full((2, 6), -32768, np.int16)), "lstm saturated")
feature = np.full((4, 16), -127, np.int8)
time = np.full((4, 64), -32768, np.int16)
params = svdf.svdf_params(Quant(0.1, 127), 0.05, Quant(1e-3, 0), Quant(1e-4, 0), Quant(1e-3, -128), 2)
same(lambda k: k.svdf(params, np.full((1, 16), -128, np.int8), feature, time, np.full(2, 2**31 - 1, np.int32),
                      np.full((1, 256), -32768, np.int16)), "svdf wrapping sums")
print("sanitized cases:", count)
"""


def test_the_lstm_and_svdf_kernels_are_clean_under_asan_and_ubsan(
    tmp_path: Path, sanitized_builds: SanitizedBuilds
) -> None:
    run = run_sanitized(tmp_path, DRIVER, sanitized_builds)
    assert f"sanitized cases: {3 * 25 * 2}" in run.stdout
