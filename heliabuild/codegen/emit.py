"""Writing the generated module's C sources (docs/firmware.md, "The generated module").

`emit_module` turns the calls and the layout into `<prefix>_model.h` and `<prefix>_model.c`: deterministic
text (the same model, plan and prefix give the same bytes), C99 that compiles with warnings as errors, with
the constants as aligned arrays in the sections the target's linker script places (`.constants` for the
constant memory, `.arena` for the activations, `.sram` for copies pinned to SRAM; DTCM is the default data
memory), one static argument struct per operator, and the two entry points of helia_model.h.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from heliabuild.codegen.calls import (
    ByteValue,
    Field,
    InlineInts,
    IntArray,
    KernelCall,
    ScratchRef,
    TensorRef,
    TensorTable,
)
from heliabuild.codegen.layout import Layout, scratch_buffer
from heliabuild.codegen.lowering import CodegenError
from heliabuild.model.io import Model

_CTYPES = {0: "float", 1: "uint16_t", 2: "int32_t", 3: "uint8_t", 4: "int64_t", 6: "uint8_t", 7: "int16_t", 9: "int8_t"}
_NUMPY = {0: "<f4", 1: "<u2", 2: "<i4", 3: "u1", 4: "<i8", 6: "u1", 7: "<i2", 9: "i1"}
PINNED_SECTIONS = {"DTCM": None, "SRAM": ".sram"}
"""Memory a constant may be pinned to -> the section its copy goes in (None: the default .bss, in DTCM)."""


@dataclass(frozen=True)
class ModuleMemory:
    """Where the module's bytes go: the section of each kind of constant (by the plan's residency), of the pinned
    copies (by destination memory; None for `pinned`: any memory, `.bss.helia.pin.<memory>`), of the stream pool
    (None: the default .bss), and the arena (`arena_section`, or, with `arena_symbol`, a global array of that name
    the caller defines when `arena_section` is None); `copy` is the function each schedule unit's copy calls
    (memcpy's signature)."""

    direct: str = ".constants"
    pin: str = ".constants"
    stream: str = ".constants"
    pinned: Mapping[str, str | None] | None = None
    stream_pool: str | None = None
    arena_section: str | None = ".arena"
    arena_symbol: str | None = None
    copy: str = "memcpy"

    def pinned_section(self, memory: str) -> str | None:
        if self.pinned is None:
            return f".bss.helia.pin.{memory.lower()}"
        return self.pinned[memory]

    def section_of(self, residency: str) -> str:
        return {"direct": self.direct, "pin": self.pin, "stream": self.stream}[residency]


FIRMWARE_MEMORY = ModuleMemory(pinned=PINNED_SECTIONS)
"""The runner firmware's placement: its linker scripts' `.constants`, `.sram` and `.arena` (docs/firmware.md)."""


def comment(text: str) -> str:
    """`text` made safe inside a C comment: only letters, digits and `._:-#@/ ` survive (tensor names and file
    names are user data; a `*/` in one must not end the comment)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "._:-#@/ ") else "_" for c in text)


def _rows(values: Iterable[str], per_row: int) -> str:
    items = list(values)
    lines = [", ".join(items[k : k + per_row]) for k in range(0, len(items), per_row)]
    return "\n".join(f"    {line}," for line in lines)


def _array(declaration: str, ctype: str, values: Sequence[str], per_row: int = 16) -> str:
    if not values:
        return f"{declaration} = {{0}};\n"
    return f"{declaration} = {{\n{_rows(values, per_row)}\n}};\n"


def _numbers(data: np.ndarray, ctype: str) -> list[str]:
    if ctype == "float":
        return [f"{float(v)!r}f" if np.isfinite(v) else "0.0f" for v in data.tolist()]
    if ctype == "int32_t":
        return [str(v) if v != -(2**31) else "(-2147483647 - 1)" for v in data.tolist()]
    if ctype == "int64_t":
        return [f"INT64_C({v})" for v in data.tolist()]
    return [str(v) for v in data.tolist()]


class _Emitter:
    def __init__(
        self,
        model: Model,
        calls: Sequence[KernelCall],
        layout: Layout,
        prefix: str,
        model_sha256: str,
        memory: ModuleMemory = FIRMWARE_MEMORY,
    ) -> None:
        self.memory = memory
        self.model_sha256 = model_sha256
        self.model = model
        self.calls = calls
        self.layout = layout
        self.prefix = prefix
        self.tensors = model.subgraphs[0].tensors
        self.lines: list[str] = []
        read: list[int] = []
        for call in calls:
            for _, field in call.fields:
                if isinstance(field, TensorRef):
                    read.append(field.index)
                elif isinstance(field, TensorTable):
                    read.extend(field.tensors)
        self.referenced = {layout.constant_of_tensor[t] for t in read if t in layout.constant_of_tensor}

    def ctype(self, tensor: int) -> str:
        code = int(self.tensors[tensor].type)
        if code not in _CTYPES:
            raise CodegenError(f"tensor {tensor}: dtype code {code} is not supported by the module generator")
        return _CTYPES[code]

    def address(self, ref: TensorRef) -> str:
        t = ref.index
        carried = self.layout.state_offset(t)
        if carried is not None:
            # A resource handle has no element type: its storage is the variable's bytes.
            return f"({_CTYPES.get(int(self.tensors[t].type), 'uint8_t')} *)&state[{carried}]"
        ctype = self.ctype(t)
        position = self.layout.constant_of_tensor.get(t)
        if position is None:
            return f"({ctype} *)&arena[{self.layout.arena.offsets[str(t)]}]"
        constant = self.layout.constants[position]
        if constant.residency == "direct":
            return f"(const {ctype} *)constant_{position}"
        if constant.residency == "pin":
            return f"(const {ctype} *)pinned_{position}"
        return f"(const {ctype} *)&stream_pool[{constant.pool_offset}]"

    def value(self, call: KernelCall, name: str, field: Field) -> str:
        if field is None:
            return "NULL"
        if isinstance(field, TensorRef):
            return self.address(field)
        if isinstance(field, ByteValue):
            return f"&op{call.op_index}_{name}"
        if isinstance(field, IntArray | TensorTable):
            return f"op{call.op_index}_{name}"
        if isinstance(field, InlineInts):
            return "{" + ", ".join(str(v) for v in field.values) + "}"
        if isinstance(field, ScratchRef):
            offset = self.layout.arena.offsets.get(scratch_buffer(call.op_index))
            return "NULL" if offset is None else f"(int8_t *)&arena[{offset}]"
        if isinstance(field, float):
            return f"{field!r}f"
        return str(field)

    def emit_constants(self) -> None:
        for position, constant in enumerate(self.layout.constants):
            if constant.residency == "stream" or position not in self.referenced:
                continue
            root = constant.tensors[0]
            ctype = self.ctype(root)
            data = self.model.buffer_data(constant.buffer)
            assert data is not None
            values = _numbers(np.frombuffer(data.tobytes(), dtype=_NUMPY[int(self.tensors[root].type)]), ctype)
            count = max(len(values), 1)
            self.lines.append(
                f"/* tensors[{position}] {comment(constant.id)}: {constant.bytes} bytes, {constant.residency} */\n"
            )
            self.lines.append(
                _array(
                    f"static const {ctype} constant_{position}[{count}] "
                    f'__attribute__((section("{self.memory.section_of(constant.residency)}"), '
                    f"aligned({max(constant.alignment, 16)})))",
                    ctype,
                    values,
                )
            )
            if constant.residency == "pin":
                memory = (constant.destination_memory or "").upper()
                pinned = self.memory.pinned
                if pinned is not None and memory not in pinned:
                    raise CodegenError(
                        f"tensors[{position}] ({constant.id}): pinned to {constant.destination_memory!r}; this target "
                        f"pins to {', '.join(pinned)}"
                    )
                section = self.memory.pinned_section(memory)
                attribute = f'section("{section}"), ' if section else ""
                self.lines.append(
                    f"static {ctype} pinned_{position}[{count}] __attribute__(({attribute}aligned(16)));\n"
                )
        for unit in self.layout.units:
            span = bytearray(unit.bytes)
            for position in unit.constants:
                constant = self.layout.constants[position]
                data = self.model.buffer_data(constant.buffer)
                assert data is not None and constant.pool_offset is not None
                start = constant.pool_offset - unit.pool_offset
                span[start : start + constant.bytes] = data.tobytes()
            ids = ", ".join(comment(self.layout.constants[p].id) for p in unit.constants)
            self.lines.append(f"/* schedule unit {unit.id}: {ids} */\n")
            self.lines.append(
                _array(
                    f"static const uint8_t unit_{unit.id}[{max(unit.bytes, 1)}] "
                    f'__attribute__((section("{self.memory.stream}"), aligned(16)))',
                    "uint8_t",
                    [f"0x{b:02x}" for b in span],
                )
            )

    def emit_calls(self) -> None:
        for call in self.calls:
            self.lines.append(f"/* operator {call.op_index}: {comment(call.op_type)} {comment(call.op_id)} */\n")
            if call.fence:
                self.emit_fence(call)
                continue
            for name, field in call.fields:
                if isinstance(field, TensorTable):
                    addresses = ", ".join(self.address(TensorRef(t)) for t in field.tensors)
                    count = len(field.tensors)
                    self.lines.append(
                        f"static const void *const op{call.op_index}_{name}[{count}] = {{{addresses}}};\n"
                    )
                elif isinstance(field, ByteValue):
                    self.lines.append(f"static const {field.ctype} op{call.op_index}_{name} = {field.value};\n")
                elif isinstance(field, IntArray):
                    self.lines.append(
                        _array(
                            f"static const {field.ctype} op{call.op_index}_{name}[{len(field.values)}]",
                            field.ctype,
                            [str(v) for v in field.values],
                            8,
                        )
                    )
            if call.args_type is not None:
                members = "\n".join(f"    .{name} = {self.value(call, name, field)}," for name, field in call.fields)
                self.lines.append(f"static const {call.args_type} op{call.op_index} = {{\n{members}\n}};\n")

    def descriptors(self, call: KernelCall, side: str, tensors: Sequence[int]) -> None:
        entries = []
        for k, t in enumerate(tensors):
            dims = [int(d) for d in self.tensors[t].shape] if self.tensors[t].shape is not None else []
            dims_name = f"op{call.op_index}_{side}{k}_dims"
            self.lines.append(
                _array(f"static const int32_t {dims_name}[{max(len(dims), 1)}]", "int32_t", [str(d) for d in dims])
            )
            entries.append(
                f"    {{&arena[{self.layout.arena.offsets[str(t)]}], {self.layout.activation_bytes[t]}u, {dims_name}, "
                f"{len(dims)}, {int(self.tensors[t].type)}}},"
            )
        self.lines.append(f"static const helia_tensor_desc op{call.op_index}_{side}[{len(tensors)}] = {{\n")
        self.lines.append("\n".join(entries) + "\n};\n")

    def emit_fence(self, call: KernelCall) -> None:
        self.descriptors(call, "inputs", call.reads)
        self.descriptors(call, "outputs", call.writes)

    def invocation(self, call: KernelCall, check: bool) -> str:
        function = call.check if check else call.run
        if call.fence:
            count = len(call.reads)
            return f"{function}(op{call.op_index}_inputs, {count}u, op{call.op_index}_outputs, {count}u, NULL)"
        if call.args_type is not None:
            return f"{function}(&op{call.op_index})"
        return f"{function}({', '.join(self.value(call, name, field) for name, field in call.fields)})"

    def emit_entry_points(self) -> None:
        prefix = self.prefix
        units_after: dict[int | None, list[int]] = {}
        for unit in self.layout.units:
            units_after.setdefault(unit.issue_after, []).append(unit.id)
        pool_of = {unit.id: unit for unit in self.layout.units}

        def copies(after: int | None) -> list[str]:
            return [
                f"    {self.memory.copy}(&stream_pool[{pool_of[u].pool_offset}], unit_{u}, {pool_of[u].bytes}u);"
                for u in units_after.get(after, [])
            ]

        init = [
            f"helia_model_result {prefix}_model_init(helia_model_context *ctx)",
            "{",
            "    helia_status status;",
            "    ctx->initialized = 0u;",
        ]
        for call in self.calls:
            init.append(f"    status = {self.invocation(call, check=True)};")
            init.append(f"    if (status != HELIA_STATUS_OK) {{ return refuse(ctx, {call.op_index}, status); }}")
        for position, constant in enumerate(self.layout.constants):
            if constant.residency == "pin" and position in self.referenced:
                init.append(f"    memcpy(pinned_{position}, constant_{position}, sizeof pinned_{position});")
        # The carried state is reset here only: model_run never resets it (the acquisition lifecycle's carry).
        filled: set[int] = set()
        for placement in self.layout.state:
            if placement.offset in filled:
                continue
            filled.add(placement.offset)
            init.append(f"    memset(&state[{placement.offset}], {placement.reset_byte}, {placement.bytes}u);")
            if placement.initial is not None:
                offset = placement.offset
                init.append(f"    memcpy(&state[{offset}], state_initial_{offset}, {placement.bytes}u);")
        init += ["    ctx->failed_operator = -1;", "    ctx->kernel_status = HELIA_STATUS_OK;"]
        init += ["    ctx->initialized = 1u;", "    return HELIA_MODEL_OK;", "}", ""]

        run = [
            f"helia_model_result {prefix}_model_run(helia_model_context *ctx)",
            "{",
            "    helia_status status;",
            "    if (ctx->initialized != 1u) { return HELIA_MODEL_NOT_INITIALIZED; }",
            "    OPERATOR_DONE(-1);",
            *copies(None),
        ]
        fence = 0
        for call in self.calls:
            run.append(f"    status = {self.invocation(call, check=False)};")
            run.append(f"    if (status != HELIA_STATUS_OK) {{ return refuse(ctx, {call.op_index}, status); }}")
            run.append(f"    OPERATOR_DONE({call.op_index});")
            if call.fence:
                run.append(f"    if (ctx->on_fence != NULL) {{ ctx->on_fence(ctx->user, {fence}u); }}")
                fence += 1
            run.extend(copies(call.op_index))
        run += ["    return HELIA_MODEL_OK;", "}", ""]
        self.lines.append("\n".join(init + run))

    def emit_io(self) -> None:
        def table(name: str, tensors: Sequence[int]) -> None:
            rows = [
                f"    {{&arena[{self.layout.arena.offsets[str(t)]}], {self.layout.activation_bytes[t]}u}},"
                for t in tensors
            ]
            self.lines.append(f"static const helia_io_tensor {name}[{max(len(tensors), 1)}] = {{\n")
            self.lines.append(("\n".join(rows) if rows else "    {NULL, 0u},") + "\n};\n")

        table("model_inputs", self.layout.inputs)
        table("model_outputs", self.layout.outputs)
        segments = 1 + sum(1 for call in self.calls if call.fence)
        digest = ", ".join(f"0x{byte:02x}" for byte in bytes.fromhex(self.model_sha256))
        self.lines.append(f"static const uint8_t model_sha256[32] = {{{digest}}};\n")
        self.lines.append(
            f"\nconst helia_model {self.prefix}_model = {{\n"
            f"    {self.prefix}_model_init,\n    {self.prefix}_model_run,\n"
            f"    model_inputs,\n    {len(self.layout.inputs)}u,\n"
            f"    model_outputs,\n    {len(self.layout.outputs)}u,\n"
            f"    {segments}u,\n    {self.layout.arena.size}u,\n    model_sha256,\n}};\n"
        )


def _arena_declaration(memory: ModuleMemory, size: int) -> str:
    """The arena's declaration: heliabuild's static array in its section; or, with `arena_symbol`, a global of
    that name (in `arena_section`, or, with none, the caller's array, declared extern) that the code below
    reaches by the name `arena` (a macro local to the generated source, so every `&arena[...]` the emitter
    writes addresses it)."""
    if memory.arena_symbol is None:
        return f'static uint8_t arena[{size}] __attribute__((section("{memory.arena_section}"), aligned(16)));'
    if memory.arena_section is None:
        declaration = f"extern uint8_t {memory.arena_symbol}[];"
    else:
        declaration = (
            f'uint8_t {memory.arena_symbol}[{size}] __attribute__((section("{memory.arena_section}"), aligned(16)));'
        )
    return f"{declaration}\n#define arena {memory.arena_symbol}"


def emit_module(
    model: Model,
    calls: Sequence[KernelCall],
    layout: Layout,
    prefix: str,
    banner: str,
    model_sha256: str,
    headers: Sequence[str] = (),
    memory: ModuleMemory = FIRMWARE_MEMORY,
) -> dict[str, bytes]:
    """`<prefix>_model.h` and `<prefix>_model.c` (module docstring); `banner` is the first comment's text and
    `model_sha256` the model's hash, compiled in so the firmware can say what it runs; `headers` are further
    headers the calls need (a target's own, such as helia_ethosu.h); `memory` places the bytes (the runner
    firmware's sections by default; heliabuild.module exports with its own)."""
    banner = comment(banner)
    guard = f"{prefix.upper()}_MODEL_H"
    header = (
        f'/* {prefix}_model.h - {banner} */\n#ifndef {guard}\n#define {guard}\n\n#include "helia_model.h"\n\n'
        f"#define {prefix.upper()}_ARENA_BYTES {layout.arena.size}u\n\n"
        f"helia_model_result {prefix}_model_init(helia_model_context *ctx);\n"
        f"helia_model_result {prefix}_model_run(helia_model_context *ctx);\n"
        f"extern const helia_model {prefix}_model;\n\n#endif /* {guard} */\n"
    )
    emitter = _Emitter(model, calls, layout, prefix, model_sha256, memory)
    extra_includes = "".join(f'#include "{header}"\n' for header in headers)
    emitter.lines.append(
        f"/* {prefix}_model.c - {banner} */\n"
        "#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n"
        f'#include "helia_ops.h"\n#include "stream_split.h"\n{extra_includes}#include "{prefix}_model.h"\n\n'
        f"{_arena_declaration(memory, max(layout.arena.size, 16))}\n"
    )
    if layout.state:
        emitter.lines.append(
            f"/* The carried state: {len(layout.state)} variable and resource tensors, set by model_init only. */\n"
            f"static uint8_t state[{layout.state_bytes}] __attribute__((aligned(16)));\n"
        )
        initialized = {p.offset: p for p in layout.state if p.initial is not None}
        for offset, placement in sorted(initialized.items()):
            assert placement.initial is not None
            emitter.lines.append(
                f"/* resource variable {comment(placement.variable or '')}: its CALL_ONCE value */\n"
                + _array(
                    f"static const uint8_t state_initial_{offset}[{max(len(placement.initial), 1)}]",
                    "uint8_t",
                    [str(b) for b in placement.initial],
                )
            )
    if layout.units:
        pool_section = f'section("{memory.stream_pool}"), ' if memory.stream_pool else ""
        emitter.lines.append(
            f"static uint8_t stream_pool[{max(layout.pool_bytes, 16)}] "
            f"__attribute__(({pool_section}aligned({layout.pool_alignment})));\n"
        )
    emitter.lines.append(
        "\n/* A per-operator profiling hook: nothing unless the build defines HELIA_PROFILE_OPERATORS and links\n"
        " * helia_profile_operator, called with -1 as model_run starts and with each operator's index after it\n"
        " * (bench/firmware.py counts instructions per layer with it). */\n"
        "#ifdef HELIA_PROFILE_OPERATORS\nvoid helia_profile_operator(int32_t op);\n"
        "#define OPERATOR_DONE(op) helia_profile_operator(op)\n#else\n#define OPERATOR_DONE(op) ((void)0)\n#endif\n"
    )
    emitter.lines.append(
        "\nstatic helia_model_result refuse(helia_model_context *ctx, int32_t op, helia_status status)\n{\n"
        "    ctx->failed_operator = op;\n    ctx->kernel_status = status;\n"
        "    return HELIA_MODEL_KERNEL_REFUSED;\n}\n\n"
    )
    emitter.emit_constants()
    emitter.emit_calls()
    emitter.lines.append("\n")
    emitter.emit_entry_points()
    emitter.emit_io()
    return {
        f"{prefix}_model.h": header.encode("ascii"),
        f"{prefix}_model.c": "".join(emitter.lines).encode("utf-8"),
    }
