"""The `litert` host backend: one initialized instance of a (fenced) model on LiteRT.

An instance holds one Interpreter per segment (heliabuild.runner.segments), each created with the same op
resolver as the reference (`OP_RESOLVER`: builtin kernels without the default XNNPACK delegate, whose
numerics differ) and allocated once. Resource variables live in their segment's interpreter and persist
across invokes. Each fence runs as heliabuild's stream-split copy, prepared once over the interpreters'
tensor memory and run per invoke.

The prepared copies address tensor memory directly (through ctypes views that do not hold the
interpreter's buffers, which LiteRT would otherwise refuse to invoke with). That memory stays in place
while no tensor is resized or reallocated; `check_addresses` confirms it after each invoke and refuses
the run otherwise.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from heliabuild.errors import RunnerError
from heliabuild.fence.contract import type_name
from heliabuild.kernels.stream_split import StreamSplitError, StreamSplitPlan, TensorBuffer, stream_split_prepare
from heliabuild.model.io import Model, load_model, serialize
from heliabuild.runner.segments import SegmentedModel, TensorInfo, cut_segments

OP_RESOLVER = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
"""The op resolver of every interpreter heliabuild creates, segments and reference alike."""


def litert_error(where: str, step: str, error: RuntimeError) -> RunnerError:
    """RunnerError `<where>: LiteRT failed to <step>: <LiteRT's text>` for LiteRT's RuntimeError (a kernel that
    fails to prepare or to invoke, such as a GATHER whose index is out of range), LiteRT's `Node number N (OP)
    failed to ...` set off by a semicolon."""
    text = re.sub(r"\s*(Node number \d+ \(\w+\) failed)", r"; \1", " ".join(str(error).split()))
    return RunnerError(f"{where}: LiteRT failed to {step}: {text.strip('; ').rstrip('.')}")


@contextmanager
def litert_failure(where: str, step: str) -> Iterator[None]:
    """LiteRT's RuntimeError inside the block raised as litert_error(where, step, error)."""
    try:
        yield
    except RuntimeError as error:
        raise litert_error(where, step, error) from None


def new_interpreter(model_bytes: bytes, where: str = "<bytes>") -> Interpreter:
    """An allocated interpreter with heliabuild's op resolver; RunnerError naming `where` when LiteRT cannot
    prepare the model (litert_failure)."""
    with litert_failure(where, "prepare the model"):
        interpreter = Interpreter(model_content=bytes(model_bytes), experimental_op_resolver_type=OP_RESOLVER)
        interpreter.allocate_tensors()
    return interpreter


def run_reference(model: Model | bytes, inputs: Sequence[np.ndarray], invokes: int = 1) -> list[list[np.ndarray]]:
    """The outputs of LiteRT running `model` whole (one interpreter, `invokes` invokes with the same inputs).

    Raises RunnerError (litert_failure) when LiteRT cannot prepare or invoke the model."""
    data = bytes(serialize(model)) if isinstance(model, Model) else bytes(model)
    where = f"{model.name if isinstance(model, Model) else '<bytes>'} (the reference)"
    interpreter = new_interpreter(data, where)
    details = interpreter.get_input_details()
    results: list[list[np.ndarray]] = []
    for _ in range(invokes):
        for detail, value in zip(details, inputs, strict=True):
            interpreter.set_tensor(detail["index"], value)
        with litert_failure(where, "invoke the model"):
            interpreter.invoke()
        results.append([interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()])
    return results


@dataclass(frozen=True)
class _Location:
    """Where a tensor of the fenced model lives: a segment interpreter's tensor, or a host array."""

    segment: int | None
    local: int | None  # the interpreter's tensor index
    host: np.ndarray | None = None


def numpy_dtype(info: TensorInfo) -> np.dtype:
    """The numpy dtype of a tensor's TFLite type."""
    name = type_name(info.dtype).lower()
    return np.dtype({"float16": np.float16, "float32": np.float32, "bool": np.bool_}.get(name, name))


class LiteRTInstance:
    """One initialized instance: segment interpreters allocated, fences prepared.

    A segment LiteRT cannot prepare or invoke raises RunnerError naming the model and the segment's original
    operators (litert_failure)."""

    def __init__(self, model: Model | bytes | str) -> None:
        loaded = load_model(model)
        self.cut: SegmentedModel = cut_segments(loaded)
        self._where = [
            f"{loaded.name}: segment {segment.index} (operators {segment.op_range_start}..{segment.op_range_end})"
            for segment in self.cut.segments
        ]
        self.interpreters: list[Interpreter] = []
        self._local: list[dict[int, int]] = []
        for segment in self.cut.segments:
            interpreter = new_interpreter(segment.model_bytes, self._where[segment.index])
            inputs = [d["index"] for d in interpreter.get_input_details()]
            outputs = [d["index"] for d in interpreter.get_output_details()]
            if len(inputs) != len(segment.inputs) or len(outputs) != len(segment.outputs):
                raise RunnerError(f"segment {segment.index}: LiteRT reports other inputs or outputs than cut")
            local = dict(zip(segment.inputs, inputs, strict=True))
            local.update(zip(segment.outputs, outputs, strict=True))
            self.interpreters.append(interpreter)
            self._local.append(local)

        # Tensor -> the segments reading it as an input, in segment order.
        readers: dict[int, list[int]] = {}
        for segment in self.cut.segments:
            for tensor in segment.inputs:
                readers.setdefault(tensor, []).append(segment.index)
        self._locations: dict[int, _Location] = {}
        for segment in self.cut.segments:
            for tensor in segment.outputs:
                self._locations[tensor] = _Location(segment.index, self._local[segment.index][tensor])
        for fence in self.cut.fences:
            for _, destination in fence.pairs:
                if destination in readers:
                    reader = readers[destination][0]
                    self._locations[destination] = _Location(reader, self._local[reader][destination])
                else:  # carried on by a later fence or returned: held by the host
                    info = self.cut.tensors[destination]
                    host = np.zeros(info.shape, dtype=numpy_dtype(info))
                    self._locations[destination] = _Location(None, None, host)
        # Graph input -> every (segment, local index) reading it; refilled before each invoke.
        self._input_targets: list[list[tuple[int, int]]] = [
            [(s, self._local[s][t]) for s in readers.get(t, ())] for t in self.cut.graph_inputs
        ]
        self._addresses = self._current_addresses()
        self._fence_plans: list[StreamSplitPlan] = [self._prepare(fence.index) for fence in self.cut.fences]

    @property
    def call_once_present(self) -> bool:
        return self.cut.call_once_present

    def input_infos(self) -> list[TensorInfo]:
        return [self.cut.tensors[t] for t in self.cut.graph_inputs]

    def output_infos(self) -> list[TensorInfo]:
        return [self.cut.tensors[t] for t in self.cut.graph_outputs]

    def _current_addresses(self) -> dict[tuple[int, int], int]:
        addresses: dict[tuple[int, int], int] = {}
        for number, local in enumerate(self._local):
            for index in local.values():
                view = self.interpreters[number].tensor(index)()
                addresses[(number, index)] = int(view.ctypes.data) if view.nbytes else 0
                del view
        return addresses

    def _buffer(self, tensor: int) -> TensorBuffer:
        info = self.cut.tensors[tensor]
        location = self._locations[tensor]
        if location.host is not None:
            data = location.host.reshape(-1).view(np.uint8)
        else:
            assert location.segment is not None and location.local is not None
            length = info.byte_length
            address = self._addresses[(location.segment, location.local)]
            if length == 0 or address == 0:
                data = np.zeros(0, np.uint8)
            else:
                data = np.ctypeslib.as_array((ctypes.c_uint8 * length).from_address(address))
        return TensorBuffer(data=data, dtype=info.dtype, shape=info.shape)

    def _prepare(self, fence_index: int) -> StreamSplitPlan:
        fence = self.cut.fences[fence_index]
        sources = [self._buffer(source) for source, _ in fence.pairs]
        destinations = [self._buffer(destination) for _, destination in fence.pairs]
        try:
            return stream_split_prepare(sources, destinations)
        except StreamSplitError as error:
            raise RunnerError(f"fence {fence_index}: the stream-split copy refuses its pairs: {error}") from None

    def fill_inputs(self, values: Sequence[np.ndarray]) -> None:
        """Write every graph input (in graph order) into each segment that reads it."""
        for targets, value in zip(self._input_targets, values, strict=True):
            for segment, local in targets:
                self.interpreters[segment].set_tensor(local, value)

    def invoke(self) -> list[float]:
        """Run the segments in order with the fences between them; return the seconds of each segment, from
        the end of the previous fence's copy (or the start) to the end of its own fence's copy, so the
        segments add up to the invoke."""
        interpreters = self.interpreters
        plans = self._fence_plans
        last = len(interpreters) - 1
        marks = [time.perf_counter()]
        number = 0
        try:  # one try around the loop: nothing is added to the timed path
            for number, interpreter in enumerate(interpreters):
                interpreter.invoke()
                if number < last:
                    plans[number].run()
                marks.append(time.perf_counter())
        except RuntimeError as error:
            raise litert_error(self._where[number], "invoke it", error) from None
        self.check_addresses()
        return [end - start for start, end in itertools.pairwise(marks)]

    def check_addresses(self) -> None:
        if self._current_addresses() != self._addresses:
            raise RunnerError(
                "LiteRT moved a tensor of a segment during an invoke; the prepared fence copies no longer "
                "address it, so the outputs cannot be trusted"
            )

    def outputs(self) -> list[np.ndarray]:
        """Copies of the graph outputs, in graph order."""
        result: list[np.ndarray] = []
        for tensor in self.cut.graph_outputs:
            location = self._locations.get(tensor)
            if location is None:
                raise RunnerError(f"graph output tensor {tensor} is produced by no segment")
            if location.host is not None:
                result.append(location.host.copy())
            else:
                assert location.segment is not None and location.local is not None
                result.append(self.interpreters[location.segment].get_tensor(location.local).copy())
        return result
