"""Python's cyclic garbage collector in an SCons build (heliabuild.scons.collector).

The collector is off while SCons reads the SConscripts and decides (the graph lives until SCons exits, and
every full collection would walk it again), on while a heliabuild stage runs, and a stage's cyclic garbage is
freed when it ends. A process whose collector was off already, or an SConstruct that turns it on again, is
left as it is. Each case runs in a fresh interpreter: the collector's state is the process's.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from test_scons import SITE_TOOLS, build_ok


def _python(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_the_collector_is_on_only_while_a_stage_runs_and_frees_its_cycles() -> None:
    out = _python(
        """
        import gc, weakref
        from heliabuild.scons import collector
        collector.pause()
        print(gc.isenabled())
        collector.freeze_the_graph()
        frozen = gc.get_freeze_count()
        class Cycle:
            pass
        with collector.stage_running():
            print(gc.isenabled())
            cycle = Cycle()
            cycle.me = cycle
            alive = weakref.ref(cycle)
            del cycle
        print(gc.isenabled(), alive() is None, gc.get_freeze_count() >= frozen)
        """
    )
    assert out.splitlines() == ["False", "True", "False True True"]


def test_overlapping_stages_keep_it_on_until_the_last_ends() -> None:
    out = _python(
        """
        import gc
        from heliabuild.scons import collector
        collector.pause()
        first, second = collector.stage_running(), collector.stage_running()
        first.__enter__(); second.__enter__()
        first.__exit__(None, None, None)
        print(gc.isenabled())
        second.__exit__(None, None, None)
        print(gc.isenabled())
        """
    )
    assert out.splitlines() == ["True", "False"]


def test_a_collector_turned_off_or_on_by_the_user_is_left_alone() -> None:
    out = _python(
        """
        import gc
        from heliabuild.scons import collector
        gc.disable()
        collector.pause()
        with collector.stage_running():
            print(gc.isenabled())
        print(gc.isenabled())
        """
    )
    assert out.splitlines() == ["False", "False"]
    out = _python(
        """
        import gc
        from heliabuild.scons import collector
        collector.pause()
        gc.enable()  # the SConstruct turns it on again after loading the tool
        with collector.stage_running():
            pass
        print(gc.isenabled())
        """
    )
    assert out == "True"


def test_an_scons_build_reads_its_sconscripts_with_the_collector_off(tmp_path: Path) -> None:
    """With real SCons: loading the tool leaves the collector on, the SConscripts run with it off from the
    first heliabuild target on (heliabuild.scons.process), a pipeline builds through every stage in the top
    folder (no build_dir), and at exit the graph is frozen and the collector off; a no-op build likewise."""
    (tmp_path / "SConstruct").write_text(
        textwrap.dedent(
            f"""
            import atexit, gc
            before = gc.isenabled()
            env = Environment(tools=["helia"], toolpath=[{str(SITE_TOOLS)!r}])
            loaded = gc.isenabled()
            model = env.HeliaSynth("model.tflite", HELIA_SYNTH_KIND="chain")
            print("collector", before, loaded, gc.isenabled())
            env.HeliaPipeline("chain", model, fences=[3])
            atexit.register(lambda: print("at exit", gc.get_freeze_count() > 0, gc.isenabled()))
            """
        ),
        encoding="utf-8",
    )
    for _ in range(2):  # a full build, then a no-op
        build = build_ok(tmp_path, "-Q")
        assert "collector True True False" in build.stdout
        assert "at exit True False" in build.stdout
    assert list(tmp_path.rglob("result.json"))
