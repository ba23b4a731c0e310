"""Port signature and payload layouts of the accelerator, and the build.json field offsets."""

from pathlib import Path

from codesign.bundle import load_bundle
from codesign.hw import AcceleratorSignature, ItemLayout, plan_accelerator
from codesign.hw.build import payload_fields
from codesign.hw.signature import ResultLayout, TraceLayout

BUNDLES = Path(__file__).resolve().parents[1] / "models" / "bundles"


def test_members_follow_the_plan() -> None:
    # the signature from the plan alone: an Accelerator built and never elaborated only warns
    plan = plan_accelerator(load_bundle(BUNDLES / "japanese_vowels_cmru2").manifest, 4)
    members = dict(AcceleratorSignature(plan).members)
    assert set(members) == {"inputs", "config", "results", "counters", "trace_0", "trace_1"}
    assert [name for name, _ in members["counters"].shape] == list(plan.counters)
    assert {"cycles", "layer0_macs", "layer1_events", "readout_macs", "layer1_acc_writes"} <= set(
        plan.counters
    )
    assert members["results"].signature.members["payload"].shape.size == ResultLayout(plan.readout).size


def test_item_payload_is_index_value_then_markers() -> None:
    fields = payload_fields(ItemLayout(13, 8))
    assert [(k, v["offset"], v["width"], v["signed"]) for k, v in fields.items()] == [
        ("index", 0, 4, 0),
        ("value", 4, 8, 1),
        ("step_end", 12, 1, 0),
        ("seq_end", 13, 1, 0),
    ]


def test_result_and_trace_arrays_are_flattened_per_lane() -> None:
    plan = plan_accelerator(load_bundle(BUNDLES / "parity_hsru").manifest, 2)
    result = payload_fields(ResultLayout(plan.readout))
    assert list(result)[:2] == ["logits[0]", "logits[1]"]
    assert result["logits[1]"]["offset"] == plan.logit_bits
    trace = payload_fields(TraceLayout(plan.layers[0]))
    assert {"valid", "group", "state[0]", "state[1]", "gate[1]", "potential[1]"} <= set(trace)
    assert trace["state[0]"]["width"] == 2  # HSRU passes on its 0/1 digital state
