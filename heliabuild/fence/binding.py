"""Plan binding: a fence plan applies only to the model it was cut for."""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as schema

from heliabuild.documents import shown
from heliabuild.errors import FenceBindingError, FenceError
from heliabuild.fence.plan import FencePlan
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model, load_model, model_sha256
from heliabuild.model.opcodes import operator_type


def primary_subgraph(model: Model) -> schema.SubGraphT:
    """Subgraph 0 of a single-subgraph model; fencing rejects any other model."""
    count = len(model.subgraphs)
    if count != 1:
        raise FenceError(
            f"{model.name}: the model has {count} subgraphs; the ETHOS_U_STREAM_SPLIT contract fences "
            "subgraph 0 of a single-subgraph model only"
        )
    return model.subgraphs[0]


def check_plan_binding(model: str | bytes | Model, plan: FencePlan) -> None:
    """Raise FenceBindingError unless `plan` was cut for `model`.

    Checked, in order: `subgraph` is 0; `model_sha256` (when the plan has
    one) and `operator_count` match the model; each fence's `after_op` lies
    within the model, and its `output_tensor_name` and `opcode`, when given,
    are what sits at `after_op`. The error names the field, the plan's value
    and the model's value.
    """
    model = load_model(model)
    if plan.subgraph != 0:
        _mismatch(model, plan, "subgraph", plan.subgraph, 0)
    if plan.model_sha256 is not None:
        actual = model_sha256(model)
        if plan.model_sha256 != actual:
            _mismatch(model, plan, "model_sha256", plan.model_sha256, actual)
    operators = model.subgraphs[0].operators or [] if model.subgraphs else []
    if plan.operator_count != len(operators):
        _mismatch(model, plan, "operator_count", plan.operator_count, len(operators))
    tensors = model.subgraphs[0].tensors or []
    where = f"{model.name}: {_plan_name(plan)}"
    for number, fence in enumerate(plan.fences):
        field = f"fences[{number}]"
        if not 0 <= fence.after_op < len(operators):
            raise FenceBindingError(
                f"{where} {field}.after_op: the plan has {fence.after_op}, which follows the last "
                f"operator of the model ({len(operators) - 1})"
                if fence.after_op >= len(operators)
                else f"{where} {field}.after_op: the plan has {fence.after_op}, not an operator index"
            )
        op = operators[fence.after_op]
        if fence.output_tensor_name is not None:
            outputs = indices(op.outputs)
            actual_name = tensor_name(tensors[outputs[0]]) if outputs else None
            if fence.output_tensor_name != actual_name:
                _mismatch(
                    model, plan, f"{field}.output_tensor_name", fence.output_tensor_name, actual_name, fence.after_op
                )
        if fence.opcode is not None:
            actual_type = operator_type(model.operator_codes[op.opcodeIndex])
            if fence.opcode != actual_type:
                _mismatch(model, plan, f"{field}.opcode", fence.opcode, actual_type, fence.after_op)


def _plan_name(plan: FencePlan) -> str:
    """`fence plan <file>` for a plan read from a file, `fence plan` for one made in memory."""
    return "fence plan" if plan.source is None else f"fence plan {plan.source}"


def _mismatch(
    model: Model, plan: FencePlan, field: str, planned: object, actual: object, after_op: int | None = None
) -> None:
    where = "" if after_op is None else f" at operator {after_op}"
    raise FenceBindingError(
        f"{model.name}: {_plan_name(plan)} {field} is {shown(planned)}, but the model has {shown(actual)}{where}",
        hint="The plan was cut for another model: re-plan the fences for this model.",
    )
