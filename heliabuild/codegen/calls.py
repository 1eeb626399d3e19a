"""The kernel call a lowering gives for one operator, and the values of its fields (docs/firmware.md, "Kernels").

A `KernelCall` names the check function (run once, in `<prefix>_model_init`) and the run function (which trusts
that check, in `<prefix>_model_run`): `KernelCall.of(op, "helia_<op>", ...)` gives `helia_<op>_check` and
`helia_<op>_run`, the convention of every kernel (c/helia_ops.h). It also names the argument struct (or None
for a positional call) and its fields; a field is an int, a float, a `TensorRef` (resolved to an address by the
layout), an `IntArray` (a small constant table, such as per-channel multipliers or weight sums), `InlineInts`
(an array member of the struct) or a `ScratchRef` (a scratch buffer planned in the arena); None is a null
pointer. A `Lowering` maps one operator to its call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from heliabuild.aot.facts import OperatorFacts
from heliabuild.model.io import Model


@dataclass(frozen=True)
class TensorRef:
    """The address of model tensor `index` (an activation, a constant, or a constant's pool copy)."""

    index: int


@dataclass(frozen=True)
class IntArray:
    """A constant table emitted beside the call: its C element type and values."""

    ctype: str
    values: tuple[int, ...]


@dataclass(frozen=True)
class InlineInts:
    """The values of an array member of the argument struct (e.g. broadcast extents), written in place."""

    values: tuple[int, ...]


@dataclass(frozen=True)
class TensorTable:
    """A constant table of tensor addresses emitted beside the call (CONCATENATION's inputs)."""

    tensors: tuple[int, ...]


@dataclass(frozen=True)
class ScratchRef:
    """A kernel's scratch buffer of `bytes` bytes, planned in the arena, live during its operator only (CONV_2D's
    im2col row); NULL where the arena is not heliabuild's to plan (an NPU model's offline allocation)."""

    bytes: int


@dataclass(frozen=True)
class ByteValue:
    """One element's bytes emitted beside the call, passed by address (PAD's fill value)."""

    ctype: str
    value: int


Field = int | float | TensorRef | IntArray | InlineInts | TensorTable | ByteValue | ScratchRef | None


@dataclass(frozen=True)
class KernelCall:
    """One operator's kernel call. `args_type` None means `run(field values...)` in field order; `fence` marks an
    ETHOS_U_STREAM_SPLIT copy (emitted with tensor descriptors); `reads` and `writes` are tensor indices."""

    op_index: int
    op_id: str
    op_type: str
    check: str
    run: str
    args_type: str | None
    fields: tuple[tuple[str, Field], ...]
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    fence: bool = False

    @property
    def scratch_bytes(self) -> int:
        """The bytes of the call's scratch buffer (0 without one)."""
        return sum(field.bytes for _, field in self.fields if isinstance(field, ScratchRef))

    @classmethod
    def of(
        cls,
        op: OperatorFacts,
        kernel: str,
        args_type: str | None,
        *,
        fields: tuple[tuple[str, Field], ...],
        reads: tuple[int, ...],
        writes: tuple[int, ...],
        check: str | None = None,
        run: str | None = None,
        fence: bool = False,
    ) -> KernelCall:
        """The call of `kernel` for `op`: its `<kernel>_check` runs once in model_init and its `<kernel>_run` (which
        trusts that check) in model_run, unless `check` or `run` names another function. A `kernel` already
        naming its run entry (`helia_<op>_run`) is that entry."""
        base = kernel.removesuffix("_run")
        return cls(
            op.index,
            op.id,
            op.op_type,
            check or f"{base}_check",
            run or f"{base}_run",
            args_type,
            fields,
            reads,
            writes,
            fence,
        )


Lowering = Callable[[OperatorFacts, Model], KernelCall]
