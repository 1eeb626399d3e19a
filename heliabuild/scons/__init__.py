"""SCons wiring of heliabuild: builders, emitters and signatures, nothing else.

The library stages know nothing of SCons; this package only turns library
calls into SCons builders, the way SCons's own Tool modules do. Load it from an
installed heliabuild with `Environment(tools=['default', heliabuild.scons.tool])`
(after `import heliabuild.scons`), or with `env.Tool('helia')` and the site tool
site_scons/site_tools/helia.py, which delegates here; either adds:

- `HeliaSynth`: a deterministic synthetic model of a kind and seed
  (heliabuild.synth), see heliabuild.scons.synth;
- `HeliaFence`: a fenced model and its `<stem>.fenced_boundaries.json`
  sidecar (heliabuild.fence), see heliabuild.scons.fence;
- `HeliaVela`: Vela's compiled model, per-layer and summary CSVs and
  segments.json (heliabuild.vela), see heliabuild.scons.vela;
- `HeliaFencePlan`: a cost-based fence plan from a model and Vela's
  per-layer CSV of it (heliabuild.fence.plan_fences), see heliabuild.scons.plan;
- `HeliaAotPlan`: the heliaAOT-format plan and report of a model for a
  platform (heliabuild.aot), see heliabuild.scons.aot;
- `HeliaRunner`: a runner folder (runner.json and the files it names) from
  a fenced model and its Vela output, AOT plan and policy
  (heliabuild.runner.freeze), see heliabuild.scons.runner;
- `HeliaRun`: the result bundle of a runner (heliabuild.runner.lifecycle),
  see heliabuild.scons.runner;
- the pseudo-builder `env.HeliaPipeline(name, model, ...)`, which chains the
  stages and adds aliases, see heliabuild.scons.pipeline;
- the pseudo-builder `env.HeliaSweep(name, model, grid={...})`, one pipeline
  per point of a grid, sharing their unfenced compiles, and `HeliaSweepTable`,
  their comparison table and HTML report, see heliabuild.scons.sweep;
- the summary table of the pipelines whose run stage a build built or found
  up to date, printed when the build ends, see heliabuild.scons.summary.

Every target also depends on the integrity node, so a target that is no
longer what SCons built is rebuilt (heliabuild.scons.integrity); loading the
tool sets `max_drift` to -1 and takes the project's build lock
(heliabuild.scons.wiring).

docs/scons.md is the user documentation.
"""

from SCons.Environment import Base as Environment

from heliabuild.scons.wiring import exists, generate


def tool(env: Environment) -> None:
    """heliabuild's SCons tool as a callable, so an installed package is enough:
    `Environment(tools=["default", heliabuild.scons.tool])` adds everything `generate` adds."""
    generate(env)


__all__ = ["exists", "generate", "tool"]
