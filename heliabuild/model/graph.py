"""Graph queries on one subgraph: producers, consumers and live sets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ai_edge_litert import schema_py_generated as schema


def tensor_name(tensor: schema.TensorT) -> str:
    name = tensor.name
    if name is None:
        return ""
    return name.decode("utf-8", errors="replace") if isinstance(name, bytes) else name


def indices(values: object) -> list[int]:
    """A flatbuffer index vector (list, numpy array or None) as a list of ints."""
    return [] if values is None else [int(v) for v in values]  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Graph:
    """Producer and consumer tables of one subgraph, computed once.

    `producer[t]` is the index of the operator that writes tensor t (absent
    for constants, graph inputs and variables); `consumers[t]` lists, in
    operator order, the operators reading t (an operator reading t twice is
    listed once).
    """

    producer: dict[int, int]
    consumers: dict[int, tuple[int, ...]]
    graph_inputs: tuple[int, ...]
    graph_outputs: tuple[int, ...]
    operator_count: int

    @classmethod
    def of(cls, subgraph: schema.SubGraphT) -> Graph:
        producer: dict[int, int] = {}
        consumers: dict[int, list[int]] = {}
        operators = subgraph.operators or []
        for index, op in enumerate(operators):
            for tensor in indices(op.outputs):
                producer.setdefault(tensor, index)
            for tensor in dict.fromkeys(indices(op.inputs)):
                if tensor >= 0:
                    consumers.setdefault(tensor, []).append(index)
        return cls(
            producer=producer,
            consumers={t: tuple(ops) for t, ops in consumers.items()},
            graph_inputs=tuple(indices(subgraph.inputs)),
            graph_outputs=tuple(indices(subgraph.outputs)),
            operator_count=len(operators),
        )

    def live_after(self, subgraph: schema.SubGraphT, after_op: int) -> list[int]:
        """Tensors that cross a cut after operator `after_op`.

        These are the tensors produced by an operator at or before `after_op`
        and read by a later operator or returned by the graph; constants and
        graph inputs are not produced and so never cross. Order: the outputs
        of `after_op` in output order, then the others by producing operator
        and output position.
        """
        return self.live_after_each(subgraph, [after_op])[after_op]

    def live_after_each(self, subgraph: schema.SubGraphT, after_ops: Iterable[int]) -> dict[int, list[int]]:
        """`live_after(subgraph, a)` for every `a` of `after_ops` (operator indices), keyed by `a`.

        One pass over the operators up to the last cut: the time is linear in
        those operators plus the length of the lists returned.
        """
        wanted = set(after_ops)
        outputs = set(self.graph_outputs)
        operators = subgraph.operators or []
        # Tensors produced so far and read later or returned, by producing operator and output position,
        # and the tensors that stop being live at each operator (their last reader).
        live: dict[int, None] = {}
        expiring: dict[int, list[int]] = {}
        result: dict[int, list[int]] = {}
        for op_index in range(max(wanted, default=-1) + 1):
            for tensor in expiring.pop(op_index, ()):
                del live[tensor]
            earlier = len(live)
            for tensor in indices(operators[op_index].outputs):
                if tensor < 0 or tensor in live or self.producer.get(tensor) != op_index:
                    continue
                readers = self.consumers.get(tensor, ())
                if tensor in outputs:
                    live[tensor] = None
                elif readers and readers[-1] > op_index:
                    live[tensor] = None
                    expiring.setdefault(readers[-1], []).append(tensor)
            if op_index in wanted:
                crossing = list(live)
                result[op_index] = crossing[earlier:] + crossing[:earlier]
        return result
