"""Fence plans: where fences go, and what identifies the model they were cut for."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from heliabuild.documents import read_json
from heliabuild.errors import FenceError
from heliabuild.fence.contract import CONTRACT_VERSION
from heliabuild.fence.coverage import FenceCoverage
from heliabuild.schema_files import check_keys, validate


@dataclass(frozen=True)
class Fence:
    """A fence after original operator `after_op`.

    A planner that had the model attaches identity: the name of the first
    output tensor of `after_op` (`output_tensor_name`), its operator type
    (`opcode`) and the index of the segment the fence closes (`segment_index`).
    """

    after_op: int
    output_tensor_name: str | None = None
    opcode: str | None = None
    segment_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "after_op": self.after_op,
            "output_tensor_name": self.output_tensor_name,
            "opcode": self.opcode,
            "segment_index": self.segment_index,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Fence:
        return cls(
            after_op=document["after_op"],
            output_tensor_name=document.get("output_tensor_name"),
            opcode=document.get("opcode"),
            segment_index=document.get("segment_index"),
        )


@dataclass(frozen=True)
class FencePlan:
    """Fences bound to the model they were cut for.

    `model_sha256` is None for a plan cut without the model; such a plan is
    bound by operator count and tensor names only. A cost-based plan also
    records its `budget_cycles` and the `coverage` of Vela's estimate.
    """

    fences: tuple[Fence, ...]
    operator_count: int
    subgraph: int = 0
    model_sha256: str | None = None
    budget_cycles: int | None = None
    coverage: FenceCoverage | None = None
    source: str | None = field(default=None, compare=False)
    """The file the plan was read from (None when made in memory); not part of the document."""

    @property
    def after_ops(self) -> list[int]:
        return [fence.after_op for fence in self.fences]

    def to_json(self) -> dict[str, Any]:
        return {
            "contract_version": CONTRACT_VERSION,
            "model_sha256": self.model_sha256,
            "subgraph": self.subgraph,
            "operator_count": self.operator_count,
            "fences": [fence.to_json() for fence in self.fences],
            "budget_cycles": self.budget_cycles,
            "coverage": None if self.coverage is None else self.coverage.to_json(),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any], name: str | None = None) -> FencePlan:
        """The plan `document`, read from the file `name` (None: made in memory); SchemaError otherwise, an
        unknown key named with the keys its object accepts (heliabuild.schema_files.check_keys)."""
        check_keys(document, "fence-plan", name or "fence plan")
        validate(document, "fence-plan", name or "fence plan")
        return cls(
            fences=tuple(Fence.from_json(entry) for entry in document["fences"]),
            operator_count=document["operator_count"],
            subgraph=document["subgraph"],
            model_sha256=document.get("model_sha256"),
            budget_cycles=document.get("budget_cycles"),
            coverage=None if document.get("coverage") is None else FenceCoverage.from_json(document["coverage"]),
            source=name,
        )


@dataclass(frozen=True)
class FenceConfig:
    """Fence positions alone: the caller asserts they apply to the model."""

    after_ops: tuple[int, ...]

    @classmethod
    def of(cls, after_ops: Iterable[int]) -> FenceConfig:
        return cls(after_ops=tuple(after_ops))


def fence_config_for(plan: FencePlan) -> FenceConfig:
    """The deliberate reduction of a plan to positions, dropping its binding."""
    return FenceConfig(after_ops=tuple(plan.after_ops))


def load_plan(path: str | os.PathLike[str]) -> FencePlan:
    """Read and validate a fence-plan JSON file (read as heliabuild.documents says); FenceError naming the file
    when it cannot be read or is not JSON, SchemaError when it breaks schemas/fence-plan.schema.json. The plan
    remembers `path` as its `source`, which binding errors name."""
    return FencePlan.from_json(read_json(path, "fence plan", error=FenceError), str(path))
