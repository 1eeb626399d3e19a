"""The backend interface: what the runner build (heliabuild.runner.freeze) and the run
(heliabuild.runner.lifecycle) ask of a backend, and nothing else. docs/runner.md, "Adding a backend".

A backend

- builds its part of a runner: from a `BuildRequest` (the model, its cut, the frozen policy, the bound
  inputs, the caller's options) it returns a `BackendBuild`, runner.json's section of its own and the files
  it copies beside runner.json;
- measures a frozen runner into a heliabuild.runner.measurement.Measurement, samples whose figures name
  their scopes;
- says which figures it measures (`scopes`), which runtime it executes (`runtime`), and how its runner is
  frozen (`compiled`, `default_policy`, `plan_platform`).

Each backend is one module of heliabuild.runner.backends, named in its registry (`REGISTRY`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from heliabuild.runner.firmware import FirmwareBuild
from heliabuild.runner.measurement import Measurement, Scopes
from heliabuild.runner.policy import Policy
from heliabuild.runner.record import FirmwareImage, FvpSection, InputRecord, RunnerPolicy
from heliabuild.runner.segments import SegmentedModel


@dataclass(frozen=True)
class BuildOptions:
    """A backend's own build options, as the CLI and SCons pass them (None: the backend's default)."""

    firmware: FirmwareBuild | None = None
    """The firmware SCons linked (qemu-m55); None: the backend links it."""
    fvp_target: str | None = None
    fvp_timelimit_s: int | None = None
    ethosu_driver_dir: str | None = None
    firmware_library: Path | None = None


@dataclass(frozen=True)
class BuildRequest:
    """What a backend builds its part of a runner from: inputs already bound to the model (freeze)."""

    model_path: Path
    cut: SegmentedModel
    policy: RunnerPolicy
    input_fills: list[bytes | None]
    vela_model: Path | None
    vela_model_bytes: bytes | None
    segments_document: dict[str, Any] | None
    aot_plan: Path | None
    options: BuildOptions = field(default_factory=BuildOptions)

    @property
    def source(self) -> str:
        """How messages name the runner being built: its model."""
        return str(self.model_path)


@dataclass(frozen=True)
class BackendBuild:
    """A backend's part of a runner: the files it copies (name in the runner folder -> bytes), runner.json's
    section of its own (`firmware` or `fvp`), and the record of Vela's model when the backend copies it."""

    files: dict[str, bytes] = field(default_factory=dict)
    firmware: FirmwareImage | None = None
    fvp: FvpSection | None = None
    vela_model: InputRecord | None = None


@runtime_checkable
class Backend(Protocol):
    """One backend (module docstring)."""

    name: str
    """The registry's name of it (heliabuild.runner.backends.REGISTRY)."""
    scopes: Scopes
    """Which figures it measures and how: result.json's `scopes`."""
    runtime: str
    """What it executes: result.json's `runtime` (`litert`, `aot`, `tflm`)."""
    compiled: bool
    """Whether the policy is compiled into a firmware: then automatic warmup is 0 and every run's outputs are
    compared with the reference, whether or not the policy asks (heliabuild.runner.verification)."""
    plan_platform: str | None
    """The platform the AOT plan must be made for, the plan being the model's own (qemu-m55); None: the plan,
    when given, is that of Vela's model (or of the model, without one) for any platform."""

    def default_policy(self) -> Policy:
        """The policy of a runner given none."""
        ...

    def check_request(self, *, aot_plan: Path | None, vela_model: Path | None, segments: Path | None) -> None:
        """Refuse, before anything is read, a runner build that lacks an input the backend needs."""
        ...

    def build(self, request: BuildRequest) -> BackendBuild:
        """Its part of the runner (module docstring); a HeliaError before anything is written."""
        ...

    def measure(self, runner: Any, timeout_s: float | None, result_dir: Path | None) -> Measurement:
        """Run the frozen `runner` (heliabuild.runner.freeze.Runner) as its policy says and return what it
        measured. `timeout_s` bounds a run on a simulated target; `result_dir` is where a failed run's own
        folder goes (beside it), for a log the backend keeps."""
        ...

    def provider_versions(self, runner: Any) -> dict[str, str | None]:
        """The versions of the tools its runs depend on, for result.json's `provider_versions` (also of a
        build-only result)."""
        ...


class BackendDefaults:
    """What most backends answer alike, for a backend class to inherit and override: not compiled, no plan
    platform, Policy()'s single invoke, no input required, no version of its own."""

    compiled = False
    plan_platform: str | None = None

    def default_policy(self) -> Policy:
        return Policy()

    def check_request(self, *, aot_plan: Path | None, vela_model: Path | None, segments: Path | None) -> None:
        return None

    def provider_versions(self, runner: Any) -> dict[str, str | None]:
        return {}
