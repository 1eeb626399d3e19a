"""The enumerations of the plan and report documents: the members heliabuild knows. A reader keeps any
other member as the string written (heliabuild.aot.binding.known_member)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class KnobName(StrEnum):
    KERNEL = "kernel"
    ACCUMULATION = "accumulation"


class KernelValue(StrEnum):
    AUTO = "auto"
    SPECIALIZED = "specialized"
    GENERIC = "generic"


class AccumulationValue(StrEnum):
    AUTO = "auto"
    PRECISE = "precise"
    FAST = "fast"


KNOB_VALUES: Mapping[str, type[StrEnum]] = {KnobName.KERNEL: KernelValue, KnobName.ACCUMULATION: AccumulationValue}
"""The values of each knob heliabuild knows (`auto` is only ever requested, never used)."""


class ResolvedBy(StrEnum):
    EXPLICIT = "explicit"
    AUTO_TABLE = "auto_table"
    AUTO_HEURISTIC = "auto_heuristic"  # reserved
    PLAN = "plan"  # reserved


class SourceKind(StrEnum):
    OPERATOR = "operator"
    MODEL = "model"
    DEFAULT = "default"
    PLAN = "plan"  # reserved


class IdSource(StrEnum):
    OUTPUT_NAME = "output_name"
    OP_TYPE_POSITION = "op_type_position"
    NODE_ID = "node_id"


class Residency(StrEnum):
    DIRECT = "direct"
    PIN = "pin"
    STREAM = "stream"


class Requantization(StrEnum):
    RSHIFT_ONLY = "rshift_only"
    GENERAL = "general"


class SetBy(StrEnum):
    ATTRIBUTE = "attribute"
    DEFAULT = "default"
    HEURISTIC = "heuristic"
    KNOB = "knob"
    PLACEMENT = "placement"
    PLAN = "plan"  # reserved


class Engine(StrEnum):
    CPU = "cpu"
    DMA = "dma"


class ScheduleSource(StrEnum):
    PLAN = "plan"
    NONE = "none"


class Goal(StrEnum):
    LATENCY = "latency"
    BALANCED = "balanced"
    SIZE = "size"
    ACCURACY = "accuracy"


class HintKind(StrEnum):
    KNOB = "knob"
    PLACEMENT = "placement"
