"""The vela stage: run ethos-u-vela, read its CSVs, attribute rows to operators and segments."""

from heliabuild.errors import VelaError
from heliabuild.vela.attribution import FenceCoverage, RowAttribution, attribute_rows, coverage_of
from heliabuild.vela.per_layer import PerLayerRow, parse_per_layer, read_per_layer
from heliabuild.vela.run import (
    DEFAULT_ACCELERATOR,
    VelaOptions,
    VelaResult,
    accelerators,
    compile,
    default_memory_mode,
    default_system_config,
    output_names,
    vela_version,
)
from heliabuild.vela.segments import SegmentEstimate, SegmentsReport, estimate_segments
from heliabuild.vela.streams import CommandStreams, command_streams
from heliabuild.vela.summary import VelaSummary, read_summary

__all__ = [
    "DEFAULT_ACCELERATOR",
    "CommandStreams",
    "FenceCoverage",
    "PerLayerRow",
    "RowAttribution",
    "SegmentEstimate",
    "SegmentsReport",
    "VelaError",
    "VelaOptions",
    "VelaResult",
    "VelaSummary",
    "accelerators",
    "attribute_rows",
    "command_streams",
    "compile",
    "coverage_of",
    "default_memory_mode",
    "default_system_config",
    "estimate_segments",
    "output_names",
    "parse_per_layer",
    "read_per_layer",
    "read_summary",
    "vela_version",
]
