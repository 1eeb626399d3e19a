"""The models the fvp tests run: a residual network fenced into three segments, compiled by the real Vela for
one accelerator config, once per session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import serialize
from heliabuild.synth import residual_network
from heliabuild.vela import compile as vela_compile

_COMPILED: dict[tuple[str, str], dict[str, Path]] = {}


def compiled_residual(tmp_path_factory: pytest.TempPathFactory, accelerator: str) -> dict[str, Path]:
    """A residual network fenced after operators 1 and 7 (three segments), compiled by Vela for `accelerator`:
    the fenced model, its sidecar, Vela's model and segments.json."""
    key = ("residual", accelerator)
    if key not in _COMPILED:
        folder = tmp_path_factory.mktemp(f"fvp-{accelerator}")
        fenced = rewrite_model_with_fences(bytes(serialize(residual_network(0))), [1, 7])
        model = folder / "model_fenced.tflite"
        model.write_bytes(bytes(fenced.fenced_bytes))
        sidecar = folder / "model_fenced.fenced_boundaries.json"
        sidecar.write_text(json.dumps(fenced.boundaries.to_json()))
        vela = vela_compile(model, folder / "vela", accelerator=accelerator)
        _COMPILED[key] = {"model": model, "sidecar": sidecar, "vela": vela.model, "segments": vela.segments_json}
    return _COMPILED[key]
