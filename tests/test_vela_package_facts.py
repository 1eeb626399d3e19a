"""Facts heliabuild reads from the installed Vela's package source instead of importing Vela's compiler (which
imports numpy and the whole compiler: most of a small compile's cost in the `heliabuild vela` parent process):
the accelerator configurations and Vela's name of each builtin operator. They must be Vela's own."""

from __future__ import annotations

import subprocess
import sys

from heliabuild.vela.attribution import _builtin_names, _vela_operator_name
from heliabuild.vela.configs import packaged_accelerators, packaged_operator_names


def test_accelerators_read_from_the_package_are_velas_own() -> None:
    from ethosu.vela.architecture_features import Accelerator

    assert packaged_accelerators() == tuple(Accelerator.member_list())


def test_operator_names_read_from_the_package_are_velas_own_for_every_builtin() -> None:
    from ethosu.vela.tflite_mapping import builtin_operator_map

    assert packaged_operator_names() is not None
    for code in _builtin_names():
        entry = builtin_operator_map.get(code)
        assert _vela_operator_name(code) == (None if entry is None else entry[0].name), code


def test_checking_options_and_naming_operators_import_no_vela_module() -> None:
    code = (
        "import sys; from heliabuild.vela.options import VelaOptions, accelerators; "
        "from heliabuild.vela.attribution import _vela_operator_name; "
        "VelaOptions(accelerator='ethos-u85-256').check('m.tflite'); "
        "assert _vela_operator_name(0) == 'Add'; "
        "print(sorted(m for m in sys.modules if m.startswith('ethosu.vela')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
