"""The AOT plan stage: heliaAOT-format plans and reports, transfer schedules, plans read back (docs/aot-plan.md).

    from heliabuild.aot import AotConfig, plan_model, write_plan

    config = AotConfig(goal="latency")
    plan, report = plan_model("kws_vela.tflite", "corstone300_ethos_u55", config, module_prefix="kws")
    write_plan("kws_vela.tflite", "build", "kws", "corstone300_ethos_u55", "aot.yaml")

Every public name is importable from here; each loads its module on first use
(the SCons emitters import `heliabuild.aot.shipped` while SConscripts are
read, which must not pull in numpy or the TFLite schema).
"""

from heliabuild.lazy import lazy_exports

_EXPORTS = {
    "AotConfig": "heliabuild.aot.config",
    "ConfigError": "heliabuild.aot.config",
    "OperatorRule": "heliabuild.aot.config",
    "StreamPool": "heliabuild.aot.config",
    "TensorRule": "heliabuild.aot.config",
    "config_from_document": "heliabuild.aot.config",
    "load_config": "heliabuild.aot.config",
    "Memory": "heliabuild.aot.platforms",
    "Platform": "heliabuild.aot.platforms",
    "PlatformError": "heliabuild.aot.platforms",
    "Transfer": "heliabuild.aot.platforms",
    "get_platform": "heliabuild.aot.platforms",
    "load_platforms": "heliabuild.aot.platforms",
    "platforms_table": "heliabuild.aot.platforms",
    "OperatorRefusal": "heliabuild.aot.admission",
    "PlanRefusedError": "heliabuild.aot.admission",
    "check_admission": "heliabuild.aot.admission",
    "operator_refusals": "heliabuild.aot.admission",
    "PlanResult": "heliabuild.aot.planner",
    "make_plan": "heliabuild.aot.planner",
    "plan_model": "heliabuild.aot.planner",
    "PlanOutputs": "heliabuild.aot.stage",
    "write_plan": "heliabuild.aot.stage",
    "OptimizationPlan": "heliabuild.aot.records",
    "OptimizationReport": "heliabuild.aot.records",
    "APPLIED": "heliabuild.aot.records",
    "load_plan": "heliabuild.aot.records",
    "load_report": "heliabuild.aot.records",
    "compare_plan": "heliabuild.aot.replay",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
