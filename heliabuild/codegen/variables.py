"""Resource variables in the generated module (docs/firmware.md, "Models with state").

A TFLite resource variable is named by its VAR_HANDLE's (container, shared_name); READ_VARIABLE copies its value
out, ASSIGN_VARIABLE copies a value in, and a CALL_ONCE operator runs an initialization subgraph once, inside
LiteRT's first invoke. `resource_variables(model, source)` finds every variable of a model the module generator
can carry, or raises CodegenError saying why not:

- every subgraph after the first is the initialization subgraph of a CALL_ONCE of subgraph 0, holding only
  VAR_HANDLE and ASSIGN_VARIABLE of constants: the generated module applies those constants in model_init,
  before any invoke, which is where the acquisition lifecycle puts AOT initialization;
- each variable has one dtype and static shape across its ASSIGN_VARIABLEs (its storage's size);
- a variable without a CALL_ONCE value is assigned by subgraph 0 before subgraph 0 first reads it (LiteRT refuses
  to read a variable nothing assigned).

Each variable's storage lives in the carried state region (heliabuild.codegen.layout), addressed through the
handle tensors of subgraph 0 that name it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ai_edge_litert import schema_py_generated as schema

from heliabuild.codegen.lowering import CodegenError
from heliabuild.fence.contract import ELEMENT_BYTES, TYPE_NAMES
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type

RESOURCE_OPERATORS = ("CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
RESOURCE = int(schema.TensorType.RESOURCE)
"""The dtype code of a resource handle tensor."""


@dataclass(frozen=True)
class ResourceVariable:
    """One resource variable: its name ('container/shared_name'), the dtype code and shape of its value, the
    bytes of its storage, its CALL_ONCE value (None: none) and the handle tensors of subgraph 0 that name it."""

    name: str
    dtype: int
    shape: tuple[int, ...]
    bytes: int
    initial: bytes | None
    handles: tuple[int, ...]


def _text(value: object) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _key(op: schema.OperatorT) -> str:
    options = op.builtinOptions
    return f"{_text(getattr(options, 'container', None))}/{_text(getattr(options, 'sharedName', None))}"


def _op_types(model: Model, graph: schema.SubGraphT) -> list[str]:
    return [operator_type(model.operator_codes[op.opcodeIndex]) for op in graph.operators or []]


def uses_resources(model: Model) -> bool:
    """Whether any subgraph of the model has a resource-variable operator or a CALL_ONCE."""
    return any(name in RESOURCE_OPERATORS for graph in model.subgraphs for name in _op_types(model, graph))


def resource_variables(model: Model, source: str) -> dict[int, ResourceVariable]:
    """Handle tensor of subgraph 0 -> the variable it names (module docstring); CodegenError saying why a model's
    variables cannot be carried."""
    main = model.subgraphs[0]
    init_graphs: set[int] = set()
    for op, name in zip(main.operators or [], _op_types(model, main), strict=True):
        if name == "CALL_ONCE":
            init_graphs.add(int(op.builtinOptions.initSubgraphIndex))
    for index, graph in enumerate(model.subgraphs[1:], start=1):
        label = f"{source}: subgraph {index} ({_text(graph.name)})"
        if index not in init_graphs:
            raise CodegenError(f"{label} is not a CALL_ONCE initialization; the module generator runs one subgraph")
        for name in _op_types(model, graph):
            if name not in ("VAR_HANDLE", "ASSIGN_VARIABLE"):
                raise CodegenError(
                    f"{label}: the CALL_ONCE initialization holds {name}; the generated module applies only "
                    "VAR_HANDLE and ASSIGN_VARIABLE of constants, in model_init"
                )
    keys: dict[tuple[int, int], str] = {}
    values: dict[str, list[schema.TensorT]] = {}
    initial: dict[str, bytes] = {}
    first_access: dict[str, str] = {}
    for index, graph in enumerate(model.subgraphs):
        for op, name in zip(graph.operators or [], _op_types(model, graph), strict=True):
            if name == "VAR_HANDLE":
                keys[(index, indices(op.outputs)[0])] = _key(op)
            elif name in ("ASSIGN_VARIABLE", "READ_VARIABLE"):
                handle = indices(op.inputs)[0]
                key = keys.get((index, handle))
                if key is None:
                    raise CodegenError(
                        f"{source}: subgraph {index}: {name} reads a resource no VAR_HANDLE of its subgraph makes"
                    )
                if name == "ASSIGN_VARIABLE":
                    value = graph.tensors[indices(op.inputs)[1]]
                    values.setdefault(key, []).append(value)
                    if index > 0:
                        data = model.buffer_data(int(value.buffer))
                        if data is None:
                            raise CodegenError(
                                f"{source}: subgraph {index}: the CALL_ONCE initialization assigns "
                                f"{tensor_name(value)!r}, not a constant"
                            )
                        initial[key] = data.tobytes()
                if index == 0:
                    first_access.setdefault(key, name)
    variables: dict[int, ResourceVariable] = {}
    for key in sorted(set(keys.values())):
        assigned = values.get(key, [])
        if not assigned:
            raise CodegenError(f"{source}: resource variable {key!r} is never assigned")
        forms = {(int(t.type), tuple(indices(t.shape))) for t in assigned}
        if len(forms) != 1:
            raise CodegenError(f"{source}: resource variable {key!r} is assigned values of different dtypes or shapes")
        ((dtype, shape),) = forms
        if dtype not in ELEMENT_BYTES or any(d < 0 for d in shape):
            kind = TYPE_NAMES.get(dtype, dtype)
            raise CodegenError(f"{source}: resource variable {key!r} holds {kind} {list(shape)}, which has no storage")
        if key not in initial and first_access.get(key) == "READ_VARIABLE":
            raise CodegenError(
                f"{source}: resource variable {key!r} is read before anything assigns it (no CALL_ONCE value)"
            )
        size = ELEMENT_BYTES[dtype]
        for extent in shape:
            size *= extent
        handles = tuple(sorted(t for (graph, t), k in keys.items() if graph == 0 and k == key))
        variable = ResourceVariable(key, dtype, shape, size, initial.get(key), handles)
        variables.update(dict.fromkeys(handles, variable))
    return variables
