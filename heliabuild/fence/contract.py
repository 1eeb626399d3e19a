"""Constants and admission rules of the ETHOS_U_STREAM_SPLIT contract, version 1."""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import FenceError
from heliabuild.model.graph import tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import CUSTOM, custom_code, effective_builtin_code

CUSTOM_CODE = "ETHOS_U_STREAM_SPLIT"
CONTRACT_VERSION = 1
OPCODE_VERSION = 1
LEGACY_CUSTOM_CODE = "STREAM_SPLIT"
FENCE_NAME_SUFFIX = "/stream_split"
REGENERATE_HINT = (
    "Regenerate the fenced model from its original unfenced input; "
    f"the old {LEGACY_CUSTOM_CODE} identifier is not an alias of {CUSTOM_CODE}."
)

_T = schema.TensorType
# Dense storage types of contract version 1 and their element sizes in bytes.
ELEMENT_BYTES: dict[int, int] = {
    _T.INT8: 1,
    _T.UINT8: 1,
    _T.INT16: 2,
    _T.INT32: 4,
    _T.INT64: 8,
    _T.FLOAT16: 2,
    _T.FLOAT32: 4,
    _T.BOOL: 1,
}
TYPE_NAMES: dict[int, str] = {
    value: name for name, value in vars(_T).items() if not name.startswith("_") and isinstance(value, int)
}


def type_name(dtype: int) -> str:
    return TYPE_NAMES.get(dtype, f"type {dtype}")


def byte_length(tensor: schema.TensorT) -> int:
    """Flat size x element size, from the tensor's metadata."""
    shape = [] if tensor.shape is None else [int(d) for d in tensor.shape]
    return int(np.prod(shape, dtype=np.int64)) * ELEMENT_BYTES[tensor.type]


def check_crossing_tensor(model: Model, tensor_index: int, tensor: schema.TensorT, after_op: int) -> None:
    """Raise FenceError unless the tensor may be carried by a fence pair."""
    where = f"{model.name}: tensor {tensor_index} ({tensor_name(tensor)!r}) crossing the cut after operator {after_op}"
    if tensor.isVariable:
        raise FenceError(f"{where} is a variable tensor, which the {CUSTOM_CODE} contract does not carry")
    if tensor.sparsity is not None:
        raise FenceError(f"{where} is sparse, which the {CUSTOM_CODE} contract does not carry")
    if tensor.type not in ELEMENT_BYTES:
        supported = ", ".join(type_name(t) for t in ELEMENT_BYTES)
        raise FenceError(f"{where} has dtype {type_name(tensor.type)}; contract version 1 carries {supported}")
    if tensor.shape is not None and any(int(d) < 0 for d in tensor.shape):
        raise FenceError(f"{where} has shape {[int(d) for d in tensor.shape]} with an unknown extent")


def is_fence_name(opcode: schema.OperatorCodeT) -> bool:
    """True for an entry whose custom code is the fence's name in any letter case."""
    code = custom_code(opcode)
    return code is not None and code.upper() == CUSTOM_CODE


def check_unfenced(model: Model, subgraph: schema.SubGraphT, expected: str, hint: str) -> None:
    """Raise FenceError(`<model>: the model already has fences; <expected>`, `hint`) when an operator of
    `subgraph` is a fence: fences are planned for and cut into the unfenced model only.

    An unused fence entry in the operator codes is not a fence (`fence_opcode_index` reuses it).
    """
    if any(is_fence_name(model.operator_codes[op.opcodeIndex]) for op in subgraph.operators or []):
        raise FenceError(f"{model.name}: the model already has fences; {expected}", hint=hint)


def is_legacy_name(opcode: schema.OperatorCodeT) -> bool:
    code = custom_code(opcode)
    return code is not None and code.upper() == LEGACY_CUSTOM_CODE


def opcode_qualifies(opcode: schema.OperatorCodeT) -> bool:
    """Whether an existing same-name entry may be reused as the fence's opcode.

    The name must match exactly, the version must be 1 and the entry must read
    as CUSTOM both to TFLite (the larger of the two code fields) and to Vela
    (which reads `builtin_code` first): 32/32, 32/0 and 0/32 qualify.
    """
    return (
        custom_code(opcode) == CUSTOM_CODE
        and opcode.version == OPCODE_VERSION
        and effective_builtin_code(opcode) == CUSTOM
        and int(opcode.builtinCode) in (0, CUSTOM)
        and int(opcode.deprecatedBuiltinCode) in (0, CUSTOM)
    )


def fence_opcode_index(model: Model) -> int | None:
    """The index of the model's reusable fence opcode, or None when it has none.

    Raises FenceError for a legacy STREAM_SPLIT entry and for any same-name
    entry that cannot be reused (a letter-case variant, another code or
    version, or a second entry).
    """
    found: int | None = None
    for index, opcode in enumerate(model.operator_codes):
        if is_legacy_name(opcode):
            raise FenceError(
                f"{model.name}: operator code {index} is the legacy custom op {custom_code(opcode)!r}; "
                "this model holds fences of an earlier contract",
                hint=REGENERATE_HINT,
            )
        if not is_fence_name(opcode):
            continue
        described = (
            f"{model.name}: operator code {index} ({custom_code(opcode)!r}, builtin_code "
            f"{int(opcode.builtinCode)}, deprecated_builtin_code {int(opcode.deprecatedBuiltinCode)}, "
            f"version {int(opcode.version)})"
        )
        if not opcode_qualifies(opcode):
            raise FenceError(
                f"{described} is not a reusable {CUSTOM_CODE} entry: expected exactly {CUSTOM_CODE!r}, "
                "builtin codes 32/32, 32/0 or 0/32 and version 1"
            )
        if found is not None:
            raise FenceError(f"{described} repeats the {CUSTOM_CODE} entry at operator code {found}")
        found = index
    return found


def new_fence_opcode() -> schema.OperatorCodeT:
    opcode = schema.OperatorCodeT()
    opcode.builtinCode = CUSTOM
    opcode.deprecatedBuiltinCode = CUSTOM
    opcode.customCode = CUSTOM_CODE
    opcode.version = OPCODE_VERSION
    return opcode
