"""Lossless TFLite IO, hashing, graph queries and stable operator ids."""

from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.ids import OperatorId, split_operator_id, stable_operator_ids
from heliabuild.model.io import Model, copy_model, load_model, model_sha256, save_model, serialize
from heliabuild.model.opcodes import custom_code, effective_builtin_code, operator_type

__all__ = [
    "Graph",
    "Model",
    "OperatorId",
    "copy_model",
    "custom_code",
    "effective_builtin_code",
    "indices",
    "load_model",
    "model_sha256",
    "operator_type",
    "save_model",
    "serialize",
    "split_operator_id",
    "stable_operator_ids",
    "tensor_name",
]
