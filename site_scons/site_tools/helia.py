"""SCons tool `helia`: `Environment(tools=["helia"])` or `env.Tool("helia")` adds heliabuild's builders and
HeliaPipeline, exactly as `Environment(tools=["default", heliabuild.scons.tool])` does (see docs/scons.md).

It is named `helia`, not `heliabuild`, so that SCons, which loads a tool as a module of the tool's name,
never shadows the heliabuild package: the tool simply delegates to heliabuild.scons.
"""

from heliabuild.scons import exists, generate

__all__ = ["exists", "generate"]
