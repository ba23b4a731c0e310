"""Port signature and stream payload layouts of the accelerator."""

import pytest
from amaranth.hdl import signed

from codesign.hw import AcceleratorSignature, ResultLayout, StepLayout
from codesign.hw.build import payload_fields

PARAMS = dict(inputs=3, input_bits=8, hidden=5, state_bits=6, classes=4, logit_bits=20)


def test_members_and_widths():
    sig = AcceleratorSignature(**PARAMS)
    members = dict(sig.members)
    assert set(members) == {
        "steps",
        "results",
        "state",
        "gate",
        "step_done",
        "cycle_count",
        "event_count",
        "mac_count",
    }
    assert members["state"].shape.size == 5 * 6
    assert members["gate"].shape == 5
    assert sig == AcceleratorSignature(**PARAMS)
    assert sig != AcceleratorSignature(**{**PARAMS, "hidden": 6})


@pytest.mark.parametrize(
    "name,bad",
    [
        ("inputs", 0),
        ("hidden", -2),
        ("state_bits", 1),
        ("classes", 1.5),
        ("logit_bits", True),
        ("counter_bits", 4),
    ],
)
def test_bad_parameter_is_a_value_error_naming_it(name, bad):
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= \d+, not {bad!r}$"):
        AcceleratorSignature(**{**PARAMS, name: bad})


def test_step_payload_is_packed_lsb_first_then_last():
    fields = payload_fields(StepLayout(3, 8))
    assert [(k, v["offset"], v["width"]) for k, v in fields.items()] == [
        ("x[0]", 0, 8),
        ("x[1]", 8, 8),
        ("x[2]", 16, 8),
        ("last", 24, 1),
    ]
    assert StepLayout(3, 8)["x"].shape.elem_shape == signed(8)


def test_result_payload_holds_class_then_logits():
    fields = payload_fields(ResultLayout(5, 12))
    assert fields["class_index"] == {"offset": 0, "width": 3, "signed": 0}
    assert fields["logits[0]"]["offset"] == 3 and fields["logits[4]"] == {
        "offset": 3 + 48,
        "width": 12,
        "signed": 1,
    }
    assert payload_fields(ResultLayout(1, 12))["class_index"]["width"] == 1
