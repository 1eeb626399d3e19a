"""heliabuild's SCons tool: builders, pseudo-builders, emitters and signatures over the library, nothing else.

Load it with `Environment(tools=['default', heliabuild.scons.tool])` (after `import heliabuild.scons`), or as
the site tool `helia` (site_scons/site_tools/helia.py). `generate(env)` touches only `env`; the settings a
build with heliabuild targets makes beyond its environments are `configure_build`'s (heliabuild.scons.process),
run when the first heliabuild target is declared. docs/scons.md is the user documentation: the builders, their
construction variables, what rebuilds when, and what heliabuild changes in a build.
"""

from SCons.Environment import Base as Environment

from heliabuild.scons.process import configure_build
from heliabuild.scons.wiring import exists, generate


def tool(env: Environment) -> None:
    """heliabuild's SCons tool as a callable, so an installed package is enough:
    `Environment(tools=["default", heliabuild.scons.tool])` adds everything `generate` adds."""
    generate(env)


__all__ = ["configure_build", "exists", "generate", "tool"]
