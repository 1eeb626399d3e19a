"""Which heliabuild kernel entry each layer calls: the one the AOT plan names (docs/firmware.md, "Kernel entries").

The plan records per layer the ns-cmsis-nn entry it chose (`operators[].kernel.entry`) and, where the layer
has one, the `accumulation` knob (aot-plans-and-reports.md). `PLAN_ENTRIES` maps each plan entry that has a
heliabuild equivalent to the heliabuild kernel doing the same job; `choose_entries` gives each lowered call
that kernel's `_check` and `_run` when the call's arguments fit it, and otherwise keeps the generic entry the
lowering chose, with a note saying why. Every choice is reported per layer in `<prefix>_layout.json`
(`kernels`). int8 sums are exact in every heliabuild entry, so `accumulation` (precise or fast, an FP16
choice) changes nothing here and is reported as the plan states it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from heliabuild.aot.records import OptimizationPlan
from heliabuild.codegen.calls import IntArray, KernelCall

PLAN_ENTRIES: dict[str, str] = {
    "arm_convolve_1x1_s8_fast": "helia_conv2d_1x1_s8",
    "arm_convolve_1x1_s8": "helia_conv2d_1x1_s8",
    "arm_convolve_s8": "helia_conv2d_s8",
    "arm_depthwise_conv_s8_opt": "helia_depthwise_conv2d_s8",
    "arm_depthwise_conv_s8": "helia_depthwise_conv2d_s8",
    "arm_fully_connected_per_channel_s8": "helia_fully_connected_s8",
    "arm_fully_connected_s8": "helia_fully_connected_s8",
    "arm_avgpool_s8": "helia_average_pool2d_s8",
    "arm_max_pool_s8": "helia_max_pool2d_s8",
}
"""Plan entry -> the heliabuild kernel (check `<kernel>_check`, run `<kernel>_run`) that does the same job. A
plan entry missing here (arm_convolve_1_x_n_s8, arm_convolve_1x1_out_s8, arm_depthwise_conv_3x3_s8, ...) has
no heliabuild equivalent: the layer calls the generic entry."""

SPECIALIZED: dict[str, tuple[str, str]] = {
    "helia_conv2d_1x1_s8": ("helia_conv2d_s8", "a 1x1 filter without padding, every output pixel inside the input"),
}
"""A specialized heliabuild kernel -> (the generic kernel whose arguments it takes, what it needs of them)."""


@dataclass(frozen=True)
class EntryChoice:
    """One layer's entry: what the plan names, the kernel called, and why when they differ."""

    op_index: int
    op_id: str
    op_type: str
    plan_entry: str | None
    accumulation: str | None
    check: str
    run: str
    equivalent: bool | None
    """Whether the call is on the plan entry's heliabuild equivalent; None when the plan names no entry."""
    note: str | None
    scratch_bytes: int
    """The call's scratch buffer in the arena (layout.json's `scratch` gives its offset)."""
    weight_sums_bytes: int
    """The call's weight sums, a constant table beside the call (0 without one)."""

    def to_json(self) -> dict[str, object]:
        return {
            "operator": self.op_index,
            "id": self.op_id,
            "type": self.op_type,
            "plan_entry": self.plan_entry,
            "accumulation": self.accumulation,
            "check": self.check,
            "run": self.run,
            "plan_entry_honoured": self.equivalent,
            "note": self.note,
            "scratch_bytes": self.scratch_bytes,
            "weight_sums_bytes": self.weight_sums_bytes,
        }


def _kernel(call: KernelCall) -> str:
    return call.run.removesuffix("_run")


def _pointwise(call: KernelCall) -> KernelCall | None:
    """`call` as a call of the 1x1 entry (no scratch), or None when its arguments do not fit it."""
    values = dict(call.fields)
    fits = (
        values.get("filter_h") == 1
        and values.get("filter_w") == 1
        and values.get("pad_top") == 0
        and values.get("pad_left") == 0
        and (int(values["output_h"]) - 1) * int(values["stride_h"]) < int(values["input_h"])  # type: ignore[arg-type]
        and (int(values["output_w"]) - 1) * int(values["stride_w"]) < int(values["input_w"])  # type: ignore[arg-type]
    )
    if not fits:
        return None
    fields = tuple(
        (name, None if name == "scratch" else 0 if name == "scratch_bytes" else field) for name, field in call.fields
    )
    return replace(call, fields=fields, check="helia_conv2d_1x1_s8_check", run="helia_conv2d_1x1_s8_run")


def choose_entries(calls: Sequence[KernelCall], plan: OptimizationPlan) -> tuple[list[KernelCall], list[EntryChoice]]:
    """The calls, each on the entry its plan names where heliabuild has it (module docstring), and the choices."""
    operators = {op.index: op for op in plan.operators}
    chosen: list[KernelCall] = []
    choices: list[EntryChoice] = []
    for call in calls:
        op = operators.get(call.op_index)
        plan_entry = op.kernel.entry if op is not None else None
        knob = op.knob("accumulation") if op is not None else None
        accumulation = str(knob.value) if knob is not None else None
        generic = _kernel(call)
        wanted = PLAN_ENTRIES.get(plan_entry) if plan_entry is not None else None
        note: str | None = None
        if plan_entry is None:
            note = None if call.fence else "the plan names no entry for this layer; heliabuild's own entry"
        elif wanted is None:
            note = f"{plan_entry} has no heliabuild equivalent; the generic entry {generic}"
        elif wanted != generic:
            base, needs = SPECIALIZED.get(wanted, (None, ""))
            special = _pointwise(call) if base == generic and wanted == "helia_conv2d_1x1_s8" else None
            if special is None:
                note = f"{wanted} ({plan_entry}) needs {needs or 'other arguments'}; the generic entry {generic}"
            else:
                call = special
        choices.append(
            EntryChoice(
                call.op_index,
                call.op_id,
                call.op_type,
                plan_entry,
                accumulation,
                call.check,
                call.run,
                None if plan_entry is None else wanted is not None and _kernel(call) == wanted,
                note,
                call.scratch_bytes,
                sum(4 * len(f.values) for name, f in call.fields if name == "weight_sums" and isinstance(f, IntArray)),
            )
        )
        chosen.append(call)
    return chosen, choices
