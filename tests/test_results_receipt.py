"""The helx.acquisition receipt: round trip and every refusal, each naming what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from heliabuild.errors import ReceiptError
from heliabuild.results.receipt import Receipt, single_receipt

INTERPRETER = "interpreter_allocate_and_first_invoke"


def document(**changes: Any) -> dict[str, Any]:
    base = {
        "schema": "helx.acquisition",
        "version": 1,
        "state": "carry",
        "warmup_invokes": 1,
        "measured_invokes": 3,
        "initialization": INTERPRETER,
        "call_once_present": True,
    }
    base.update(changes)
    return base


def test_round_trip() -> None:
    receipt = Receipt.from_json(document())
    assert receipt == Receipt("carry", 1, 3, INTERPRETER, True)
    assert receipt.to_json() == document()
    aot = Receipt.from_json(document(initialization="before_measurement", call_once_present=None, warmup_invokes=0))
    aot.check(source="r", sample_count=3, runtime="aot")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 2}, "version: receipt protocol version 2 is not supported"),
        ({"schema": "other"}, "schema: unsupported receipt schema 'other'"),
        ({"state": "single"}, "warmup_invokes: contradictory receipt: state single with 1 warmup"),
        (
            {"state": "single", "warmup_invokes": 0},
            "measured_invokes: contradictory receipt: state single with 3 measured",
        ),
        ({"initialization": "before_measurement"}, "call_once_present: contradictory receipt: initialization before"),
        ({"call_once_present": None}, "call_once_present: contradictory receipt: initialization interpreter"),
        ({"measured_invokes": 0}, "measured_invokes: found 0, expected at least 1"),
        ({"warmup_invokes": -1}, "warmup_invokes: found -1"),
        ({"warmup_invokes": True}, "warmup_invokes: found True"),
        ({"state": "reset"}, "state: found 'reset'"),
        ({"initialization": "lazy"}, "initialization: found 'lazy'"),
        ({"call_once_present": "yes"}, "call_once_present: found 'yes'"),
        ({"extra": 1}, "extra: unknown receipt field"),
    ],
)
def test_refusals_name_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ReceiptError, match=message):
        Receipt.from_json(document(**changes), "runner/receipt")


def test_missing_field_and_version() -> None:
    without_version = document()
    del without_version["version"]
    with pytest.raises(ReceiptError, match="version: missing"):
        Receipt.from_json(without_version)
    without_state = document()
    del without_state["state"]
    with pytest.raises(ReceiptError, match="state: missing"):
        Receipt.from_json(without_state)


def test_counts_must_agree_with_samples_runtime_and_native_warmups() -> None:
    receipt = Receipt.from_json(document())
    with pytest.raises(ReceiptError, match="receipt states 3 measured invokes but the result holds 2 samples"):
        receipt.check(source="r", sample_count=2)
    with pytest.raises(ReceiptError, match="runtime aot initializes as before_measurement"):
        receipt.check(source="r", runtime="aot")
    with pytest.raises(ReceiptError, match="receipt states 1 warmup invokes but the runner reports 2"):
        receipt.check(source="r", warmup_invokes=2)
    with pytest.raises(ReceiptError, match="runtime 'cuda'"):
        receipt.check(source="r", runtime="cuda")


def test_constructor_refuses_contradictions() -> None:
    with pytest.raises(ReceiptError, match="state single with 2 warmup"):
        Receipt("single", 2, 1, INTERPRETER, False)


def test_single_receipt_among_emitted() -> None:
    assert single_receipt([document()], "uart").measured_invokes == 3
    with pytest.raises(ReceiptError, match="uart: missing acquisition receipt"):
        single_receipt([], "uart")
    with pytest.raises(ReceiptError, match="uart: duplicate acquisition receipt: the runner emitted 2"):
        single_receipt([document(), document()], "uart")
    with pytest.raises(ReceiptError, match="missing acquisition receipt: the file holds no receipt entry"):
        Receipt.from_json([])
