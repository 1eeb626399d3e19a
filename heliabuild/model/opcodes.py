"""Operator codes: effective builtin code and operator type names."""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as schema

CUSTOM = schema.BuiltinOperator.CUSTOM

_BUILTIN_NAMES: dict[int, str] = {
    value: name
    for name, value in vars(schema.BuiltinOperator).items()
    if not name.startswith("_") and isinstance(value, int)
}


def effective_builtin_code(opcode: schema.OperatorCodeT) -> int:
    """The builtin code as TFLite's GetBuiltinCode reads v3 and v3a schemas:
    the larger of `builtin_code` and `deprecated_builtin_code`."""
    return max(int(opcode.builtinCode), int(opcode.deprecatedBuiltinCode))


def custom_code(opcode: schema.OperatorCodeT) -> str | None:
    """The custom code as text, or None when the entry has none."""
    value = opcode.customCode
    if value is None:
        return None
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def builtin_name(code: int) -> str:
    return _BUILTIN_NAMES.get(code, f"BUILTIN_{code}")


def operator_type(opcode: schema.OperatorCodeT) -> str:
    """The operator's type name: the builtin's name (`CONV_2D`), or for a
    custom operator its custom code (`ethos-u`, `ETHOS_U_STREAM_SPLIT`)."""
    code = effective_builtin_code(opcode)
    if code == CUSTOM:
        return custom_code(opcode) or "CUSTOM"
    return builtin_name(code)
