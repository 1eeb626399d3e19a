"""Test vectors of the stream-split and Detess C kernels, written as one C program that runs them on the
target (QEMU's Cortex-M55) and reports each case as a record: `case <kernel> <id> <status> <pair> <match>`.

The expected status, pair and bytes come from the Python references on the host (heliabuild.kernels); the
target's answer is compared with them by the test, so a case that passes on the host and not on the target
shows as a target failure.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heliabuild.kernels.detess import DType, check_inference, execute
from heliabuild.kernels.detess.c_kernel import _spec
from heliabuild.kernels.native import Status
from heliabuild.kernels.stream_split import StreamSplitError, TensorBuffer, stream_split_copy
from helpers.detess_goldens import GARBAGE, random_case, tiled_golden

ARENA_BYTES = 1024
SPLIT_DTYPES = {"int8": 9, "uint8": 3, "int16": 7, "int32": 2, "int64": 4, "float16": 1, "float32": 0, "bool": 6}


def _bytes(name: str, data: bytes) -> str:
    values = ", ".join(f"0x{b:02x}" for b in data) or "0"
    size = max(len(data), 1)
    return f'static const uint8_t {name}[{size}] __attribute__((section(".constants"), aligned(16))) = {{{values}}};'


@dataclass(frozen=True)
class SplitCase:
    """Pairs carved from one arena: (offset, dtype, shape) per side; the arena's bytes before the call."""

    inputs: tuple[tuple[int, str, tuple[int, ...]], ...]
    outputs: tuple[tuple[int, str, tuple[int, ...]], ...]
    arena: bytes

    def expected(self) -> tuple[int, int, bytes]:
        """(status, failing pair or -1, arena after) by the Python reference."""
        arena = np.frombuffer(bytearray(self.arena), dtype=np.uint8)

        def side(offset: int, dtype: str, shape: tuple[int, ...]) -> TensorBuffer:
            size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            return TensorBuffer(memoryview(arena[offset : offset + size]), dtype, shape)

        try:
            stream_split_copy([side(*s) for s in self.inputs], [side(*s) for s in self.outputs])
        except StreamSplitError as error:
            return int(error.status), -1 if error.pair is None else error.pair, arena.tobytes()
        return int(Status.OK), -1, arena.tobytes()


def split_cases(rng: random.Random, count: int) -> list[SplitCase]:
    """Random requests: 1-4 pairs of random dtypes and shapes at random offsets, so some overlap (refused)
    and some alias exactly (no-op); a few with a dtype or shape mismatch."""
    cases = []
    for _ in range(count):
        pairs = rng.randint(1, 4)
        inputs, outputs = [], []
        for _ in range(pairs):
            dtype = rng.choice(list(SPLIT_DTYPES))
            shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
            width = np.dtype(dtype).itemsize
            size = int(np.prod(shape)) * width
            source = rng.randrange(0, ARENA_BYTES - size) // width * width
            destination = source if rng.random() < 0.1 else rng.randrange(0, ARENA_BYTES - size) // width * width
            out_dtype, out_shape = dtype, shape
            if rng.random() < 0.05:
                out_dtype = rng.choice(
                    [d for d in SPLIT_DTYPES if np.dtype(d).itemsize == width and d != dtype] or [dtype]
                )
            if rng.random() < 0.05:
                out_shape = tuple(reversed(shape))
            inputs.append((source, dtype, shape))
            outputs.append((destination, out_dtype, out_shape))
        arena = bytes(rng.randrange(256) for _ in range(ARENA_BYTES))
        cases.append(SplitCase(tuple(inputs), tuple(outputs), arena))
    return cases


@dataclass(frozen=True)
class DetessCase:
    """One valid Detess request with its tiled input and the expected output buffer."""

    input_spec: object
    output_spec: object
    tiled: bytes
    output_bytes: int
    expected: bytes
    status: int


def detess_cases(rng: random.Random, count: int) -> list[DetessCase]:
    """Random valid requests of ranks 1-6, INT8 and BF16, contiguous and strided outputs (the goldens' cases)."""
    cases = []
    values_rng = np.random.default_rng(rng.randrange(2**32))
    while len(cases) < count:
        case = random_case(rng, rng.choice([DType.INT8, DType.BF16]), rng.randint(1, 6), max_elements=300)
        request = case.request()
        plan = check_inference(request)
        values = case.values(values_rng)
        tiled = tiled_golden(values, case.axes, case.tile, case.padding)
        if len(tiled) > 8192 or plan.output_bytes > 8192:  # type: ignore[union-attr]
            continue
        output = np.full(plan.output_bytes, GARBAGE, dtype=np.uint8)  # type: ignore[union-attr]
        source = np.frombuffer(tiled, dtype=np.uint8)
        outcome = execute(plan, [source], [output])  # type: ignore[arg-type]
        status = 0 if outcome is None else int(outcome.code)
        cases.append(
            DetessCase(
                _spec(request.inputs[0]), _spec(request.outputs[0]), tiled, int(output.size), output.tobytes(), status
            )
        )
    return cases


def _spec_initializer(record: object) -> str:
    def ints(name: str, count: int) -> str:
        values = getattr(record, name)
        return "{" + ", ".join(str(int(values[k])) for k in range(count)) + "}"

    return (
        f"{{{record.rank}, {record.dtype}, {record.layout}, {record.padding}, "  # type: ignore[attr-defined]
        f"{ints('axes', 4)}, {ints('shape', 6)}, {ints('tile_shape', 4)}, {ints('strides', 6)}}}"
    )


def qualification_program(splits: Sequence[SplitCase], detess: Sequence[DetessCase]) -> str:
    """The C99 source of the vector program (module docstring)."""
    lines = [
        "#include <stdint.h>",
        "#include <string.h>",
        '#include "detess.h"',
        '#include "records.h"',
        '#include "stream_split.h"',
        "",
        f"static uint8_t arena[{ARENA_BYTES}] __attribute__((aligned(16)));",
        "static uint8_t tiled[8192] __attribute__((aligned(16)));",
        "static uint8_t linear[8192] __attribute__((aligned(16)));",
        "",
        "static void report(uint32_t kernel, uint32_t id, int32_t status, int32_t pair, const void *bytes,",
        "                   const void *expected, uint32_t length)",
        "{",
        '    helia_record_begin("case");',
        "    helia_record_u32(kernel);",
        "    helia_record_u32(id);",
        "    helia_record_i32(status);",
        "    helia_record_i32(pair);",
        "    helia_record_u32(memcmp(bytes, expected, length) == 0 ? 1u : 0u);",
        "    helia_record_end();",
        "}",
        "",
    ]
    body: list[str] = []
    for k, case in enumerate(splits):
        after = case.expected()[2]
        lines.append(_bytes(f"split_{k}_before", case.arena))
        lines.append(_bytes(f"split_{k}_after", after))
        for side, entries in (("in", case.inputs), ("out", case.outputs)):
            descs = []
            for j, (offset, dtype, shape) in enumerate(entries):
                lines.append(f"static const int32_t split_{k}_{side}{j}_dims[] = {{{', '.join(map(str, shape))}}};")
                size = int(np.prod(shape)) * np.dtype(dtype).itemsize
                descs.append(
                    f"{{&arena[{offset}], {size}u, split_{k}_{side}{j}_dims, {len(shape)}, {SPLIT_DTYPES[dtype]}}}"
                )
            lines.append(f"static helia_tensor_desc split_{k}_{side}[] = {{{', '.join(descs)}}};")
        body += [
            "    {",
            "        size_t pair = HELIA_NO_PAIR;",
            f"        memcpy(arena, split_{k}_before, sizeof arena);",
            f"        status = (int32_t)helia_stream_split_copy(split_{k}_in, {len(case.inputs)}u, split_{k}_out, "
            f"{len(case.outputs)}u, &pair);",
            f"        report(0u, {k}u, status, pair == HELIA_NO_PAIR ? -1 : (int32_t)pair, arena, split_{k}_after, "
            "sizeof arena);",
            "    }",
        ]
    for k, case in enumerate(detess):
        lines.append(_bytes(f"detess_{k}_tiled", case.tiled))
        lines.append(_bytes(f"detess_{k}_expected", case.expected))
        lines.append(
            f"static const helia_detess_tensor_spec detess_{k}_specs[2] = "
            f"{{{_spec_initializer(case.input_spec)}, {_spec_initializer(case.output_spec)}}};"
        )
        body += [
            "    {",
            "        helia_detess_request request;",
            "        helia_detess_plan plan;",
            "        helia_detess_const_buffer input;",
            "        helia_detess_buffer output;",
            f"        request.inputs = &detess_{k}_specs[0];",
            "        request.input_count = 1u;",
            f"        request.outputs = &detess_{k}_specs[1];",
            "        request.output_count = 1u;",
            "        request.param_count = 0u;",
            f"        memcpy(tiled, detess_{k}_tiled, {len(case.tiled)}u);",
            f"        memset(linear, 0x{GARBAGE:02x}, {case.output_bytes}u);",
            "        input.data = tiled;",
            f"        input.capacity = {len(case.tiled)}u;",
            "        output.data = linear;",
            f"        output.capacity = {case.output_bytes}u;",
            "        status = (int32_t)helia_detess_check_inference(&request, &plan);",
            "        if (status == 0) {",
            "            status = (int32_t)helia_detess_execute(&plan, &input, 1u, &output, 1u);",
            "        }",
            f"        report(1u, {k}u, status, -1, linear, detess_{k}_expected, {case.output_bytes}u);",
            "    }",
        ]
    lines += ["", "int main(void)", "{", "    int32_t status;", *body]
    lines += [
        '    helia_record_begin("end");',
        "    helia_record_u32(helia_record_count());",
        "    helia_record_end();",
    ]
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)
