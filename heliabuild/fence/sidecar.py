"""The identity a fenced model carries: `<stem>.fenced_boundaries.json`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, NamedTuple

from heliabuild.documents import read_json
from heliabuild.errors import FenceError
from heliabuild.fence.contract import CONTRACT_VERSION, CUSTOM_CODE
from heliabuild.schema_files import validate


class TensorPair(NamedTuple):
    """One input/output pair of a fence, by tensor name in the final fenced graph.

    A named tuple, so `pair.input`, `pair[0]` and `pair == (input, output)` all work.
    """

    input: str
    output: str

    def to_json(self) -> dict[str, str]:
        return {"input": self.input, "output": self.output}

    @classmethod
    def from_json(cls, document: dict[str, str]) -> TensorPair:
        return cls(input=document["input"], output=document["output"])


@dataclass(frozen=True)
class Segment:
    """Original operators `op_range_start`..`op_range_end` (inclusive) and the
    fence that ends them; the last segment has no fence, no pairs and null names.

    `end_tensor_name` is the first intercepted tensor as the source model names
    it; `fence_tensor_name` is the fence's first output, the sidecar join key.
    """

    index: int
    op_range_start: int
    op_range_end: int
    tensor_pairs: tuple[TensorPair, ...]
    end_tensor_name: str | None
    fence_tensor_name: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "op_range_start": self.op_range_start,
            "op_range_end": self.op_range_end,
            "tensor_pairs": [pair.to_json() for pair in self.tensor_pairs],
            "end_tensor_name": self.end_tensor_name,
            "fence_tensor_name": self.fence_tensor_name,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Segment:
        return cls(
            index=document["index"],
            op_range_start=document["op_range_start"],
            op_range_end=document["op_range_end"],
            tensor_pairs=tuple(TensorPair.from_json(p) for p in document["tensor_pairs"]),
            end_tensor_name=document["end_tensor_name"],
            fence_tensor_name=document["fence_tensor_name"],
        )


@dataclass(frozen=True)
class FenceBoundaries:
    """Everything the contract says a fenced model carries.

    `boundary_after_ops` (original operator indices) is authoritative; a
    consumer joins across recompilation by `(source_sha256, after_op)` first
    and tensor names second. `fenced_sha256` binds the sidecar to the fenced
    model's bytes.
    """

    source_model: str
    source_sha256: str
    subgraph: int
    num_segments: int
    boundary_after_ops: tuple[int, ...]
    segments: tuple[Segment, ...]
    fenced_sha256: str
    contract_version: int = CONTRACT_VERSION
    custom_code: str = CUSTOM_CODE

    def to_json(self) -> dict[str, Any]:
        return {
            "contract_version": self.contract_version,
            "custom_code": self.custom_code,
            "source_model": self.source_model,
            "source_sha256": self.source_sha256,
            "fenced_sha256": self.fenced_sha256,
            "subgraph": self.subgraph,
            "num_segments": self.num_segments,
            "boundary_after_ops": list(self.boundary_after_ops),
            "segments": [segment.to_json() for segment in self.segments],
        }

    @classmethod
    def from_json(cls, document: dict[str, Any], name: str = "sidecar") -> FenceBoundaries:
        """The sidecar `document` (from the file `name`); SchemaError when it breaks its schema. Whether its
        counts fit a model is the caller's to check (heliabuild.fence.verify, the runner build)."""
        validate(document, "fenced-boundaries", name)
        return cls(
            source_model=document["source_model"],
            source_sha256=document["source_sha256"],
            subgraph=document["subgraph"],
            num_segments=document["num_segments"],
            boundary_after_ops=tuple(document["boundary_after_ops"]),
            segments=tuple(Segment.from_json(s) for s in document["segments"]),
            fenced_sha256=document["fenced_sha256"],
            contract_version=document["contract_version"],
            custom_code=document["custom_code"],
        )


def load_sidecar(path: str | os.PathLike[str]) -> FenceBoundaries:
    """The sidecar in the file `path` (read as heliabuild.documents says); FenceError naming the file when it
    cannot be read or is not JSON, SchemaError when it breaks its schema."""
    return FenceBoundaries.from_json(read_json(path, "sidecar", error=FenceError), str(path))
