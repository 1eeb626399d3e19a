"""The vela stage: run ethos-u-vela, read its CSVs, attribute rows to operators and segments.

Every public name is importable from here; each loads its module on first use.
"""

from heliabuild.lazy import lazy_exports

_EXPORTS = {
    "DEFAULT_ACCELERATOR": "heliabuild.vela.names",
    "CommandStreams": "heliabuild.vela.streams",
    "FenceCoverage": "heliabuild.fence.coverage",
    "PerLayerRow": "heliabuild.vela.per_layer",
    "RowAttribution": "heliabuild.vela.attribution",
    "SegmentEstimate": "heliabuild.vela.segments",
    "SegmentsReport": "heliabuild.vela.segments",
    "VelaError": "heliabuild.errors",
    "VelaOptions": "heliabuild.vela.run",
    "VelaResult": "heliabuild.vela.run",
    "VelaSummary": "heliabuild.vela.summary",
    "accelerators": "heliabuild.vela.run",
    "attribute_rows": "heliabuild.vela.attribution",
    "command_streams": "heliabuild.vela.streams",
    "compile": "heliabuild.vela.run",
    "coverage_of": "heliabuild.vela.attribution",
    "default_memory_mode": "heliabuild.vela.names",
    "default_system_config": "heliabuild.vela.names",
    "estimate_segments": "heliabuild.vela.segments",
    "output_names": "heliabuild.vela.names",
    "parse_per_layer": "heliabuild.vela.per_layer",
    "read_per_layer": "heliabuild.vela.per_layer",
    "read_summary": "heliabuild.vela.summary",
    "vela_version": "heliabuild.vela.run",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
