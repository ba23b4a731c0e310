"""The Amaranth accelerator in amaranth.sim, bit for bit against the golden model.

Every layer's state and gate at every step, every logit and class, and the MAC and event counters
(which the latency and energy reports read) must equal the golden model's, for the reference
bundles and for random members of the whole family (cells, eps, 1-3 layers, DCLS, pooling).
"""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.bundle import load_bundle
from codesign.bundle.io import Bundle, check_weights
from codesign.bundle.random import (
    random_family_bundle,
    random_integer_inputs,
    random_network_manifest,
    random_network_weights,
)
from codesign.bundle.spec import accumulator_bits, array_table, shift_bounds
from codesign.errors import CodesignError
from codesign.golden import run_golden
from codesign.hw import Accelerator
from codesign.hw.issue import drain_cycles
from codesign.hw.plan import MERGED_KEYS, frozen_shift_ranges, parse_share, plan_accelerator, resolve_narrow
from codesign.hw.pysim import item_beats, simulate
from codesign.hw.targets import get_target
from codesign.intmath import signed_range
from codesign.quant.stack import deployed_from_bundle

BUNDLES = Path(__file__).resolve().parents[1] / "models" / "bundles"
REFERENCE = sorted(p.name for p in BUNDLES.iterdir() if (p / "manifest.yaml").exists())


def assert_matches_golden(
    bundle: Bundle,
    sequences,
    *,
    lanes: int,
    seed: int | None = None,
    weights="baked",
    target="generic",
    counters="all",
    share="off",
    narrow="off",
    share_updates="off",
    merge="off",
):
    result = simulate(
        bundle,
        sequences,
        lanes=lanes,
        seed=seed,
        weights=weights,
        target=target,
        counters=counters,
        share=share,
        narrow=narrow,
        share_updates=share_updates,
        merge=merge,
    )
    layer_macs = np.zeros(len(bundle.manifest.layers), dtype=np.int64)
    layer_events = np.zeros_like(layer_macs)
    readout_macs = 0
    for n, (x, got) in enumerate(zip(sequences, result.sequences, strict=True)):
        exp = run_golden(bundle, np.asarray(x)[None])
        for i, trace in enumerate(exp.layers):
            np.testing.assert_array_equal(got.states[i], trace.states[0], err_msg=f"seq {n} layer {i} states")
            table = bundle.weights.get(f"layers.{i}.su_gate")
            if table is None:
                np.testing.assert_array_equal(
                    got.gates[i], trace.gates[0], err_msg=f"seq {n} layer {i} gates"
                )
            else:  # a closed neuron's gate is not computed (a skipped or held group): compare open ones
                opened = table[np.arange(len(x)) % len(table)] != 0
                np.testing.assert_array_equal(
                    got.gates[i][opened], trace.gates[0][opened], err_msg=f"seq {n} layer {i} open gates"
                )
            layer_macs[i] += trace.macs.sum()
            layer_events[i] += trace.events.sum()
        readout_macs += exp.readout_macs.sum()
        np.testing.assert_array_equal(got.logits, exp.logits[0], err_msg=f"seq {n} logits")
        np.testing.assert_array_equal(got.classes, exp.classes[0], err_msg=f"seq {n} classes")
    c = result.counters
    if counters == "none":
        assert c == {}
        return result
    for i in range(len(layer_macs)):
        assert c[f"layer{i}_macs"] == layer_macs[i], f"layer {i} MACs"
        assert c[f"layer{i}_events"] == layer_events[i], f"layer {i} events"
    assert c["readout_macs"] == readout_macs, "readout MACs"
    assert c["sequences"] == len(sequences)
    return result


@pytest.mark.parametrize("name", REFERENCE)
def test_reference_bundles_match_golden(name: str) -> None:
    bundle = load_bundle(BUNDLES / name)
    xs = random_integer_inputs(bundle, sequences=3, steps=(1, 8), seed=1)
    widest = max(layer.size for layer in bundle.manifest.layers)
    for lanes in sorted({min(3, widest), widest}):
        assert_matches_golden(bundle, xs, lanes=lanes, seed=lanes)


@pytest.mark.parametrize(("target", "counters"), [("up5k", "basic"), ("ecp5", "none"), ("up5k", "all")])
def test_mapped_builds_match_golden(target: str, counters: str) -> None:
    """Block RAM or logic per memory, LUT (shift-and-add) or hard multipliers, fewer counters:
    the same integers as the golden model."""
    for seed in (3, 11, 29):
        bundle = random_family_bundle(seed)
        widest = max(layer.size for layer in bundle.manifest.layers)
        xs = random_integer_inputs(bundle, sequences=2, steps=(1, 6), seed=seed)
        result = assert_matches_golden(
            bundle, xs, lanes=min(4, widest), seed=seed, target=target, counters=counters
        )
        if counters == "basic":
            assert "cycles" in result.counters and "layer0_weights_reads" not in result.counters


def test_target_decides_memories_and_multipliers() -> None:
    bundle = load_bundle(BUNDLES / "spoken_digits_cmru")
    generic = plan_accelerator(bundle.manifest, 4)
    assert {m.style for m in generic.memories} == {"auto"} and generic.layers[0].multiplier == "auto"
    up5k = plan_accelerator(bundle.manifest, 4, target="up5k")
    styles = {m.name: m.style for m in up5k.memories}
    # 32 EBRs wanted, 29 kept: the readout's results (3 x 39 bits, a once-per-sequence queue:
    # 3 EBRs for about 200 logic cells) leave; the state (8 x 64 bits, 4 EBRs) and the bias
    # (8 x 128 bits, 8 EBRs) stay (the 16-entry queues of before made the state leave)
    assert styles["readout_results"] == "logic"
    assert styles["layer0_state"] == "block" and styles["layer0_bias"] == "block"
    assert styles["layer0_weights"] == "block"
    chip = get_target("up5k")
    assert sum(chip.blocks_for(m.depth, m.width) for m in up5k.memories if m.style == "block") <= 29
    hard = sum(e.lanes * len(e.matrices) for e in up5k.engines if e.multiplier == "hard")
    assert hard <= 8  # the UP5K's DSPs
    assert up5k.readout.lanes == 1  # once per sequence: its lanes would buy nothing
    with pytest.raises(CodesignError, match="--target 'xc7'"):
        plan_accelerator(bundle.manifest, 4, target="xc7")
    with pytest.raises(CodesignError, match="--counters 'some'"):
        plan_accelerator(bundle.manifest, 4, counters="some")


def test_mixed_multipliers_match_golden() -> None:
    """More products than hard multipliers: the readout's (the widest values) and the layer's
    first 7 take the UP5K's 8 SB_MAC16 (``*``), the rest shift-and-add, and the sums are the
    golden model's."""
    manifest = random_network_manifest(
        inputs=5, layers=[{"cell": "cmru", "size": 6, "eps": 1, "weight_bits": 8}], classes=3, seed=5
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 5))
    plan = plan_accelerator(manifest, 6, target="up5k")
    layer = plan.layers[0]
    assert (layer.multiplier, layer.hard_products) == ("mixed", 7)  # 6 lanes x 2 matrices
    assert plan.readout.lanes == 1 and plan.readout.multiplier == "hard"
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 6), seed=5)
    assert_matches_golden(bundle, xs, lanes=6, seed=5, target="up5k", counters="basic")


def test_mingru_update_multiplies_shift_add_when_hard_ones_run_out() -> None:
    """minGRU's update ``z * (u - h)`` is a multiply per lane: at P = 12 on the UP5K its 12
    products cannot have the 8 SB_MAC16, so they shift-and-add, and the readout and the first 7
    weight products take the hard ones (synthesis mapped every ``*`` to a hard multiplier before:
    12 of 8 at d = 32, P = 4); the states stay the golden model's. With multipliers to spare the
    update keeps hard ones, ahead of the first layer's narrower weight x input products."""
    manifest = random_network_manifest(
        inputs=5, layers=[{"cell": "mingru", "size": 12, "weight_bits": 8}], classes=3, seed=7
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 7))
    layer = plan_accelerator(manifest, 12, target="up5k").layers[0]
    assert (layer.update_multiplier, layer.multiplier, layer.hard_products) == ("lut", "mixed", 7)
    layer = plan_accelerator(manifest, 4, target="up5k").layers[0]
    assert (layer.update_multiplier, layer.multiplier, layer.hard_products) == ("hard", "mixed", 3)
    assert plan_accelerator(manifest, 12, target="ecp5").layers[0].update_multiplier == "hard"
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 6), seed=7)
    assert_matches_golden(bundle, xs, lanes=12, seed=7, target="up5k", counters="basic")


def test_spoken_digits_cmru_stack_shape_matches_golden() -> None:
    """The shape of ``models/spoken_digits_cmru_stack_hw.yaml`` (the stacked recipe: a minGRU d = 16
    in front of a CMRU d = 16, 4-bit weights, 13 inputs, 11 classes, last-step readout at 4 bits)
    on the RTL equals the golden model, at P = 4 as `codesign rtl --lanes 4` builds it."""
    manifest = random_network_manifest(
        inputs=13,
        layers=[
            {"cell": "mingru", "size": 16, "weight_bits": 4},
            {"cell": "cmru", "size": 16, "eps": 1, "weight_bits": 4},
        ],
        classes=11,
        seed=19,
    )
    manifest = manifest.model_copy(update={"readout": manifest.readout.model_copy(update={"weight_bits": 4})})
    bundle = Bundle(manifest, check_weights(manifest, random_network_weights(manifest, 19)))
    xs = random_integer_inputs(bundle, sequences=3, steps=(20, 30), seed=19, density=0.9)
    assert_matches_golden(bundle, xs, lanes=4, seed=19)


def test_dcls_taps_shift_add_when_hard_multipliers_run_out() -> None:
    """A DCLS front end's tap products ``w * x`` are multiplies too: on the UP5K two DCLS layers
    at P = 2 need more SB_MAC16 than its 8 (synthesis mapped every ``*`` to one before: 16 of 8),
    so the first layer's taps, the narrowest products, shift-and-add, and the states stay the
    golden model's."""
    manifest = random_network_manifest(
        inputs=7,
        layers=[
            {"cell": "mingru", "size": 4, "weight_bits": 8, "dcls": {"taps": 2, "span": 4, "weight_bits": 8}},
            {
                "cell": "cmru",
                "size": 4,
                "eps": 1,
                "weight_bits": 8,
                "dcls": {"taps": 2, "span": 4, "weight_bits": 8},
            },
        ],
        classes=3,
        seed=9,
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 9))
    plan = plan_accelerator(manifest, 2, target="up5k")
    assert plan.layers[0].dcls.hard_taps == 0  # the first layer's 8-bit inputs: the cheapest products
    chip = get_target("up5k")
    used = 0
    for e in plan.engines:
        per_product = chip.multiplies_needed(e.weight_bits, e.item_bits)
        n = e.lanes * len(e.matrices) if e.multiplier == "hard" else e.hard_products
        used += n * per_product
        if e.dcls is not None:
            used += e.dcls.hard_taps * chip.multiplies_needed(e.dcls.weight_bits, e.dcls.item_bits)
        if e.kind == "mingru" and e.update_multiplier == "hard":
            used += e.lanes * chip.multiplies_needed(e.gate_bits + 2, e.state_bits + 1)
    assert used <= chip.multipliers
    assert plan_accelerator(manifest, 2, target="ecp5").layers[0].dcls.hard_taps == 2
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 7), seed=9)
    assert_matches_golden(bundle, xs, lanes=2, seed=9, target="up5k", counters="basic")


@pytest.mark.parametrize(
    ("name", "lanes", "target", "weights"),
    [
        ("spoken_digits_cmru", 4, "up5k", "frozen"),
        ("japanese_vowels_mingru", 3, "generic", "baked"),
        ("flip_flop_bgmingru_dcls", 2, "ecp5", "runtime"),
    ],
)
def test_shared_multipliers_match_golden(name: str, lanes: int, target: str, weights: str) -> None:
    """One multiplier per lane serving both matrices in two successive cycles: the same sums, the
    same MAC counts, about twice the layer's cycles."""
    bundle = load_bundle(BUNDLES / name)
    layer = plan_accelerator(bundle.manifest, lanes, target=target, share="on").layers[0]
    assert (layer.products, layer.passes) == (1, 2)
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 6), seed=2)
    shared = assert_matches_golden(
        bundle, xs, lanes=lanes, seed=2, target=target, weights=weights, share="on"
    )
    alone = simulate(bundle, xs, lanes=lanes, seed=2, target=target, weights=weights)
    assert shared.counters["layer0_busy_cycles"] > 1.5 * alone.counters["layer0_busy_cycles"]
    assert shared.counters["layer0_weights_reads"] == alone.counters["layer0_weights_reads"]


@pytest.mark.parametrize("share", ["on", "2"])
def test_shared_multipliers_over_three_matrices_and_selective_layers(share: str) -> None:
    """alphaCMRU's three matrices on one multiplier (three parts) or two (the second part uses one
    of them), behind a DCLS front end and beside selective and event-driven layers, with stalls."""
    manifest = random_network_manifest(
        inputs=4,
        layers=[
            {"cell": "alphacmru", "size": 5, "eps": 1, "weight_bits": 6, "dcls": {"taps": 2, "span": 3}},
            {"cell": "mingru", "size": 3, "selective": {"period": 2}},
            {"cell": "alphacmru", "size": 4, "eps": -1},
        ],
        classes=3,
        seed=8,
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 8))
    plan = plan_accelerator(manifest, 2, share=share)
    assert [e.passes for e in plan.layers] == ([3, 2, 3] if share == "on" else [2, 1, 2])
    xs = random_integer_inputs(bundle, sequences=3, steps=(1, 7), seed=8)
    for lanes in (1, 2):
        assert_matches_golden(bundle, xs, lanes=lanes, seed=lanes, share=share, weights="runtime")


@pytest.mark.parametrize(
    ("name", "lanes", "target", "weights", "share"),
    [
        ("japanese_vowels_cmru2", 4, "up5k", "spram", "1"),  # both layers folded, in SPRAM via config
        ("japanese_vowels_mingru", 3, "generic", "baked", "on:2"),  # a slice read again per piece
        ("flip_flop_bgmingru_dcls", 2, "ecp5", "runtime", "on"),  # loaded through config, DCLS
        ("spoken_digits_cmru", 4, "up5k", "frozen", "on"),  # ROM slices
    ],
)
def test_folded_weights_match_golden(name: str, lanes: int, target: str, weights: str, share: str) -> None:
    """``--narrow auto``: a shared-multiplier engine's weight word as one slice per pass at
    consecutive addresses, pass ``q`` reading slice ``q``: the same sums and cycles as the unfolded
    build, a memory ``passes`` times deeper and narrower, read once per pass."""
    bundle = load_bundle(BUNDLES / name)
    options = {"target": target, "share": share, "frozen": weights in ("frozen", "spram")}
    folded = plan_accelerator(bundle.manifest, lanes, spram=weights == "spram", narrow="auto", **options)
    wide = plan_accelerator(bundle.manifest, lanes, spram=weights == "spram", narrow="off", **options)
    for e, w in zip(folded.engines, wide.engines, strict=True):
        mem, flat = e.memories["weights"], w.memories["weights"]
        folds = -(-len(e.matrices) // e.products)
        assert mem.fold == folds and mem.depth == flat.depth * folds
        assert mem.elements == e.lanes * e.products == flat.elements // folds
        assert e.memories["bias"].fold == folds and e.memories["bias"].depth == e.groups * folds
        if "acc" in e.memories:  # an event-driven engine's kept sums fold the same way
            assert e.memories["acc"].fold == folds and e.memories["acc"].depth == e.groups * folds
    assert folded.layers[0].memories["weights"].fold == 2
    assert folded.shape_key()["narrow"] == "auto" and "narrow" not in wide.shape_key()
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 5), seed=4)
    got = assert_matches_golden(
        bundle, xs, lanes=lanes, seed=4, target=target, weights=weights, share=share, narrow="auto"
    )
    ref = simulate(bundle, xs, lanes=lanes, seed=4, target=target, weights=weights, share=share, narrow="off")
    assert got.counters["layer0_busy_cycles"] == ref.counters["layer0_busy_cycles"]
    passes = folded.layers[0].passes
    assert got.counters["layer0_weights_reads"] == passes * ref.counters["layer0_weights_reads"]


def test_three_matrices_fold_into_three_slices() -> None:
    """alphaCMRU's three matrices on one multiplier per lane: three slices per word (an address
    times 3), or, on two multipliers, two slices whose last holds one matrix and a zero; the
    event-driven layer's kept sums too, also with products in two Booth-digit pieces; the state
    in slices read over the last slot's passes (one group: the same pause between steps)."""
    manifest = random_network_manifest(
        inputs=4,
        layers=[
            {"cell": "alphacmru", "size": 5, "eps": 1, "weight_bits": 6, "dcls": {"taps": 2, "span": 3}},
            {"cell": "alphacmru", "size": 4, "eps": -1},
        ],
        classes=3,
        seed=9,
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 9))
    xs = random_integer_inputs(bundle, sequences=2, steps=(1, 6), seed=9)
    for share, folds in (("on", 3), ("2", 2), ("on:2", 3)):
        plan = plan_accelerator(manifest, 2, share=share, narrow="auto")
        assert [e.memories["weights"].fold for e in plan.layers] == [folds, folds]
        assert plan.layers[1].memories["acc"].fold == folds  # kept sums: slices of 1 or 2 matrices
        assert plan.layers[1].digit_passes == (2 if share == "on:2" else 1)  # slices written 2 apart
        sliced = folds if 2 >= folds else 1  # two lanes' states: fewer elements than 3 slices
        assert [e.memories["state"].fold for e in plan.layers] == [sliced, sliced]
        assert_matches_golden(bundle, xs, lanes=2, seed=2, share=share, weights="runtime", narrow="auto")
    # one group per layer: nothing but the pause between steps lies between a slice's write and
    # the next step's read of it (slice q: q cycles after C4, on pass q of the last slot)
    one = plan_accelerator(manifest, 5, share="on", narrow="auto")
    assert [e.groups for e in one.layers] == [1, 1] and one.layers[0].memories["state"].fold == 3
    assert drain_cycles(one.layers[0]) == drain_cycles(plan_accelerator(manifest, 5, share="on").layers[0])
    assert_matches_golden(bundle, xs, lanes=5, seed=3, share="on", narrow="auto")
    with pytest.raises(CodesignError, match="--narrow 'yes' is not one of off, auto"):
        plan_accelerator(manifest, 2, narrow="yes")


@pytest.mark.parametrize(
    ("name", "lanes", "target", "weights", "share"),
    [
        ("japanese_vowels_cmru2", 4, "up5k", "frozen", "1"),  # the UP5K build, folded, kept sums
        ("japanese_vowels_mingru", 3, "generic", "baked", "off"),  # three-stage unit, pooled sums
        ("flip_flop_bgmingru_dcls", 2, "ecp5", "runtime", "on"),  # two-stage unit, DCLS front end
        ("japanese_vowels_cmru2_su", 4, "generic", "baked", "off"),  # selective walk
        ("parity_hsru", 4, "generic", "baked", "off"),  # one group: the gap before the next step
        # on the UP5K the state is written one lane per turn (state_by_lane), also for units of
        # two and three stages, two state fields, pooled sums, a selective walk and DCLS
        ("japanese_vowels_mingru", 3, "up5k", "frozen", "off"),
        ("flip_flop_bgmingru_dcls", 2, "up5k", "runtime", "on"),
        ("japanese_vowels_cmru2_su", 4, "up5k", "baked", "1"),
        ("parity_hsru", 4, "up5k", "baked", "off"),
    ],
)
def test_shared_update_unit_matches_golden(
    name: str, lanes: int, target: str, weights: str, share: str
) -> None:
    """``--share-updates on``: one update unit per layer serves a group's lanes in the ``P``
    cycles after its sums are ready, the issue stage waiting ``P - 1`` cycles after each group;
    the states, events and logits stay the golden model's, and only the cycles grow."""
    bundle = load_bundle(BUNDLES / name)
    plan = plan_accelerator(bundle.manifest, lanes, target=target, share=share, share_updates="on")
    assert all(e.update_gap == e.lanes - 1 for e in plan.layers) and plan.readout.update_gap == 0
    assert plan.shape_key()["share_updates"] == "on"
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 5), seed=4)
    options = {
        "lanes": lanes,
        "seed": 4,
        "target": target,
        "weights": weights,
        "share": share,
        "narrow": "auto",
    }
    got = assert_matches_golden(bundle, xs, share_updates="on", **options)
    ref = simulate(bundle, xs, **options)
    assert got.cycles > ref.cycles  # the update unit's turns cost cycles, counted by cycle_floor
    with pytest.raises(CodesignError, match="--share-updates 'yes' is not one of off, on"):
        plan_accelerator(bundle.manifest, lanes, share_updates="yes")


@pytest.mark.parametrize(
    ("name", "lanes", "weights", "share_updates"),
    [
        ("japanese_vowels_cmru2", 4, "frozen", "on"),  # state read per turn, pooled sums
        ("japanese_vowels_cmru2", 8, "frozen", "on"),  # ... round the slices
        ("japanese_vowels_cmru2", 2, "frozen", "off"),  # a unit per lane: held words
        ("japanese_vowels_mingru", 3, "frozen", "on"),  # a three-stage unit, unfolded state: held
        ("flip_flop_bgmingru_dcls", 2, "runtime", "on"),  # DCLS front ends (their memories unmarked)
    ],
)
def test_up5k_memories_marked_collision_free_never_collide(
    monkeypatch, collision_watch, name: str, lanes: int, weights: str, share_updates: str
) -> None:
    """On the UP5K the plan marks the item memories, the queues of two words or more, the kept
    sums, the state and the pooled sums ``no_rw_check`` (``plan.COLLISION_FREE``), so yosys does
    not make their reads read-first (a write register and a bypass per memory: 886 logic cells
    of JapaneseVowels at P = 4). That holds only if no read ever meets a write of its word: here
    every such memory is watched over a run that matches the golden model. A state read one lane
    per turn is laid out so that no lane's read meets another's write (``front.state_interleaved``);
    with the UP5K's two-stage update units, four consecutive lanes per word put lane ``j``'s read
    on lane ``j - 3``'s write in JapaneseVowels at P = 8 (the mutant below)."""
    from codesign.hw import front

    bundle = load_bundle(BUNDLES / name)
    plan = plan_accelerator(bundle.manifest, lanes, target="up5k", share="1", share_updates=share_updates)
    marked = {m.name for m in plan.memories if m.no_collisions}
    for m in plan.memories:
        if m.kind in ("items", "accumulators", "state", "pooled") and m.shared is None:
            assert m.name in marked and m.attrs["no_rw_check"] == 1, m
        if m.kind == "queue" and m.depth == 1 or m.name.endswith("_dcls_counts"):
            assert m.name not in marked, m  # a one-word queue, the DCLS counts: read-first kept
        if m.name.endswith(("_dcls_zbuf", "_dcls_listed")):
            assert m.name in marked, m  # cleared by O, a cycle after Z's read
        if m.name.endswith("_dcls_lists"):
            assert m.name in marked, m  # appended by N while receiving, read by L while sending
        if m.kind == "queue" and m.depth >= 2:
            assert m.name in marked, m  # the layers' entries, the DCLS outputs
    assert not any(m.no_collisions for m in plan_accelerator(bundle.manifest, lanes).memories)
    xs = random_integer_inputs(bundle, sequences=2, steps=(3, 6), seed=5)
    options = {"lanes": lanes, "seed": 5, "target": "up5k", "weights": weights, "share": "1"}
    collisions, memories, monitor = collision_watch
    got = simulate(bundle, xs, share_updates=share_updates, narrow="auto", monitors=[monitor], **options)
    assert collisions == []
    assert_matches_golden(bundle, xs, share_updates=share_updates, narrow="auto", **options)
    if name == "japanese_vowels_cmru2" and share_updates == "on":
        state = [e.memories["state"] for e in plan.layers]
        assert [e.update_latency for e in plan.layers] == [2, 2]  # Target.update_stages_min
        # lane j's read (C3 + j) meets lane j - 3's write (C3 + j - 3 + 2 + 1): at P = 4 two
        # lanes per word keep them apart, at P = 8 (four per word) only the lanes round the two
        # slices do
        layouts = [front.state_interleaved(e, m) for e, m in zip(plan.layers, state, strict=True)]
        assert layouts == [lanes == 8] * 2, (layouts, [m.fold for m in state])
        assert all("state" in front.lane_reads(plan, e) for e in plan.layers)
    if (name, lanes) == ("japanese_vowels_cmru2", 8):
        # the mutant: four consecutive lanes per word, lane j's word is lane j - 3's
        monkeypatch.setattr(front, "state_interleaved", lambda e, mem: False)
        collisions.clear()
        memories.clear()
        mutant = simulate(
            bundle, xs, share_updates=share_updates, narrow="auto", monitors=[monitor], **options
        )
        assert collisions and mutant.cycles == got.cycles


def test_shared_update_unit_frees_its_lanes_multipliers() -> None:
    """A shared minGRU update unit needs one ``z * (u - h)`` multiplier where a unit per lane
    needed ``P``: the plan counts one and hands the freed UP5K DSPs to weight products or DCLS
    taps (the d = 12 DCLS network's shape: 7 of 8 DSPs used before, all 8 with the freed one)."""
    manifest = random_network_manifest(
        inputs=7,
        layers=[
            {"cell": "mingru", "size": 12, "dcls": {"taps": 2, "span": 4}},
            {"cell": "cmru", "size": 12, "eps": 1, "dcls": {"taps": 2, "span": 4}},
        ],
        classes=5,
        seed=1,
    )
    chip = get_target("up5k")

    def dsps(plan, *, update: bool) -> int:
        total = 0
        for e in plan.engines:
            hard = {"hard": e.lanes * e.products, "mixed": e.hard_products}.get(e.multiplier, 0)
            total += hard * chip.multiplies_needed(e.weight_bits, e.item_bits)
            if e.dcls is not None:
                total += e.dcls.hard_taps * chip.multiplies_needed(e.dcls.weight_bits, e.dcls.item_bits)
            if update and e.kind == "mingru" and e.update_multiplier == "hard":
                units = 1 if e.shared_update else e.lanes
                total += units * chip.multiplies_needed(e.gate_bits + 2, e.state_bits + 1)
        return total

    options = {"target": "up5k", "share": "1"}
    per_lane = plan_accelerator(manifest, 2, **options)
    shared = plan_accelerator(manifest, 2, share_updates="on", **options)
    assert shared.layers[0].update_multiplier == "hard" and shared.layers[0].shared_update
    assert dsps(shared, update=True) <= chip.multipliers
    assert dsps(shared, update=False) > dsps(per_lane, update=False)


def test_shared_update_build_records_one_unit(tmp_path: Path) -> None:
    """``codesign rtl --share-updates on``: ``build.json`` says one update unit per layer and the
    Verilog has one update module per layer where the default build has one per lane."""
    from codesign.hw.build import build_rtl

    bundle_dir = BUNDLES / "japanese_vowels_cmru2"
    info = build_rtl(bundle_dir, tmp_path / "b", lanes=4, target="up5k", counters="none", share_updates="on")
    assert info["plan"]["share_updates"] == "on"
    assert [e["update_units"] for e in info["plan"]["engines"]] == [1, 1, 0]
    modules = [
        line.split()[1]
        for line in (tmp_path / "b" / "accelerator.v").read_text().splitlines()
        if line.startswith("module ") and ".update" in line
    ]
    top = info["top"]  # the bundle's name by default (codesign rtl --name)
    assert modules == [f"\\{top}.layer0.update", f"\\{top}.layer1.update"], modules
    # the lanes' write-back values are computed once and kept per lane until the next group's
    # turn: the folded state and pooled-sum slices are written from them (no copy), and the last
    # layer's once-per-sequence queue is two registers; on the UP5K no queue has a slice behind it
    verilog = (tmp_path / "b" / "accelerator.v").read_text()
    assert "_wdata_" not in verilog and "pool_shared" in verilog and "pool_3" not in verilog
    queue = verilog.split(f"module \\{top}.layer1.entries")[1].split("endmodule")[0]
    assert "skid" in queue and "storage" not in queue and "entry_slice" not in verilog
    # the memories whose reads never meet a write: recorded, and marked for yosys
    marked = {m["name"] for m in info["plan"]["memories"] if m["no_collisions"]}
    assert {"layer0_state", "layer1_pool", "layer1_acc", "layer0_items", "layer0_entries"} <= marked
    assert "readout_results" not in marked  # one word: read the cycle after its first write
    assert verilog.count("no_rw_check") == len(marked)


def test_narrow_defaults_to_auto_on_the_fpga_targets() -> None:
    """Without ``--narrow``, the UP5K plan folds the words of engines with shared multipliers
    (measured: fewer logic cells, as many or fewer block RAMs, the same cycles), the ECP5 (one
    build measured, not better everywhere), generic and ASIC plans do not (their Verilog
    unchanged); an explicit ``off`` stays off, and a plan without sharing has nothing to fold
    either way."""
    bundle = load_bundle(BUNDLES / "japanese_vowels_cmru2")
    for target, mode in (("up5k", "auto"), ("ecp5", "off"), ("generic", "off"), ("asic", "off")):
        assert resolve_narrow(None, target) == mode and resolve_narrow("off", target) == "off"
        plan = plan_accelerator(bundle.manifest, 4, target=target, share="1")
        assert plan.narrow == mode
        folds = [e.memories["weights"].fold for e in plan.layers]
        assert folds == ([2, 2] if mode == "auto" else [1, 1]), (target, folds)
        off = plan_accelerator(bundle.manifest, 4, target=target, share="1", narrow="off")
        assert off.narrow == "off" and [e.memories["weights"].fold for e in off.layers] == [1, 1]
    alone = plan_accelerator(bundle.manifest, 4, target="up5k")  # no sharing: one pass, no fold
    assert [e.memories["weights"].fold for e in alone.layers] == [1, 1]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), lanes=st.integers(1, 8), target=st.sampled_from(["generic", "up5k"]))
def test_random_family_bundles_match_golden_with_shared_multipliers(
    seed: int, lanes: int, target: str
) -> None:
    bundle = random_family_bundle(seed)  # selective layers: tests/test_selective.py
    lanes = min(lanes, max(layer.size for layer in bundle.manifest.layers))
    xs = random_integer_inputs(bundle, sequences=2, steps=(1, 6), seed=seed)
    assert_matches_golden(bundle, xs, lanes=lanes, seed=seed, target=target, share="on")


def test_auto_sharing_keeps_every_product_on_a_hard_multiplier() -> None:
    """d = 16 CMRU at P = 8 on the UP5K: 16 layer products and the readout's for 8 SB_MAC16.
    The readout multiplies 16-bit states, the layer 8-bit inputs: the readout takes one. Without
    sharing, 9 of the layer's products are shift-and-add multipliers; with ``auto``, each lane's
    one multiplier serves both matrices (two cycles per slot), 7 of them hard, and
    ``build.json``'s plan says so."""
    from codesign.hw.build import plan_summary

    bundle = load_bundle(Path(__file__).resolve().parents[1] / "flows/fpga/spoken_digits_cmru_d16")
    off = plan_accelerator(bundle.manifest, 8, target="up5k", frozen=True)
    auto = plan_accelerator(bundle.manifest, 8, target="up5k", frozen=True, share="auto")
    assert (off.layers[0].multiplier, off.layers[0].hard_products, off.layers[0].passes) == ("mixed", 7, 1)
    layer = auto.layers[0]
    assert (layer.multiplier, layer.hard_products, layer.products, layer.passes) == ("mixed", 7, 1, 2)
    assert off.readout.multiplier == auto.readout.multiplier == "hard"
    # where at most a lane's worth would be shift-and-add, auto does not share (P = 4: 8 products, 7 left)
    assert plan_accelerator(bundle.manifest, 4, target="up5k", share="auto").layers[0].passes == 1
    assert plan_accelerator(bundle.manifest, 4, share="auto").layers[0].passes == 1  # generic: no budget
    summary = plan_summary(auto)
    assert summary["share"] == "auto" and summary["engines"][0]["passes"] == 2
    # the measured UP5K build: shared, 7 hard products and one shift-and-add, frozen ROMs
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 5), seed=6)
    assert_matches_golden(bundle, xs, lanes=8, seed=6, target="up5k", weights="frozen", share="auto")
    assert auto.shape_key()["share"] == "auto" and "share" not in off.shape_key()
    assert parse_share("on") == ("1", 1) and parse_share(3) == ("3", 3)
    for bad in ("0", "yes", "-1"):
        with pytest.raises(CodesignError, match=f"--share-multipliers '{bad}'"):
            plan_accelerator(bundle.manifest, 8, share=bad)


@pytest.mark.parametrize("target", ["up5k", "ecp5", "generic"])
def test_frozen_builds_match_golden(target: str) -> None:
    """Weights, biases and parameters as ROMs (``--weights frozen``), mapped to block RAM or LUTs."""
    for seed in (4, 17):
        bundle = random_family_bundle(seed)
        widest = max(layer.size for layer in bundle.manifest.layers)
        xs = random_integer_inputs(bundle, sequences=2, steps=(1, 6), seed=seed)
        assert_matches_golden(bundle, xs, lanes=min(4, widest), seed=seed, target=target, weights="frozen")


def test_spram_builds_match_golden() -> None:
    """``--weights spram``: frozen, but the largest weight matrices in the UP5K's single-port RAMs,
    loaded through ``config`` (a read and a write port on one address)."""
    for seed in (4, 17):
        bundle = random_family_bundle(seed)
        widest = max(layer.size for layer in bundle.manifest.layers)
        plan = plan_accelerator(bundle.manifest, min(2, widest), target="up5k", frozen=True, spram=True)
        assert any(mem.style == "huge" for mem in plan.memories)  # seeds whose weights qualify
        xs = random_integer_inputs(bundle, sequences=2, steps=(1, 6), seed=seed)
        assert_matches_golden(bundle, xs, lanes=min(2, widest), seed=seed, target="up5k", weights="spram")
    bundle = load_bundle(BUNDLES / "japanese_vowels_cmru2")
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 5), seed=3)
    assert_matches_golden(
        bundle, xs, lanes=2, seed=3, target="up5k", weights="spram", counters="none", share="auto"
    )


def test_narrow_build_records_its_folds(tmp_path: Path) -> None:
    """``codesign rtl`` at P = 4 for the UP5K folds by default (``--narrow auto``): both layers'
    weights fold into two slices of 32 bits, which fit the four SPRAMs together (unfolded, one
    layer's 64-bit words took all four); ``build.json`` records the folds and the memory shapes
    the Verilog has."""
    from codesign.hw.build import build_rtl

    bundle_dir = BUNDLES / "japanese_vowels_cmru2"
    wide = plan_accelerator(
        load_bundle(bundle_dir).manifest, 4, target="up5k", frozen=True, spram=True, share="1", narrow="off"
    )
    assert [m.name for m in wide.memories if m.style == "huge"] == ["layer1_weights"]
    info = build_rtl(
        bundle_dir,
        tmp_path / "b",
        lanes=4,
        weights="spram",
        target="up5k",
        counters="none",
        share="1",
    )
    plan = info["plan"]
    assert plan["narrow"] == "auto"  # the UP5K's default
    folded = {
        m["name"]: (m["depth"], m["elements"], m["fold"], m["style"])
        for m in plan["memories"]
        if m["fold"] > 1
    }
    assert folded["layer0_weights"] == (96, 4, 2, "huge") and folded["layer1_weights"] == (128, 4, 2, "huge")
    assert folded["layer1_acc"][:3] == (8, 4, 2) and folded["layer0_bias"][:3] == (8, 4, 2)
    assert "readout_weights" not in folded  # one matrix: nothing to fold


def test_spram_plan_and_verilog(tmp_path: Path) -> None:
    """The plan puts the two layers' weight matrices (4 SPRAMs of 16 bits) in single-port RAMs with
    configuration ids, keeps every other parameter a ROM, and the Verilog gives them no initial
    value (yosys maps no initialised memory to an SB_SPRAM256KA)."""
    from codesign.hw.build import build_rtl

    bundle_dir = BUNDLES / "japanese_vowels_cmru2"
    plan = plan_accelerator(load_bundle(bundle_dir).manifest, 2, target="up5k", frozen=True, spram=True)
    huge = [mem for mem in plan.memories if mem.style == "huge"]
    assert [(m.name, m.config_id, m.rom) for m in huge] == [
        ("layer0_weights", 0, False),
        ("layer1_weights", 1, False),
    ]
    assert all(m.rom for m in plan.memories if m.kind in ("weights", "params") and m.style != "huge")
    assert plan.shape_key()["spram"]
    info = build_rtl(bundle_dir, tmp_path / "b", lanes=2, weights="spram", target="up5k", counters="none")
    assert info["weights"] == "spram" and info["plan"]["spram"]
    text = (tmp_path / "b" / "accelerator.v").read_text()
    assert text.count('(* ram_style = "huge" *)') == 2
    for block in text.split('(* ram_style = "huge" *)')[1:]:
        assert "initial begin" not in block.split(";", 1)[1].split("always", 1)[0]
    with pytest.raises(CodesignError, match="single-port"):
        plan_accelerator(load_bundle(bundle_dir).manifest, 2, target="ecp5", frozen=True, spram=True)
    with pytest.raises(CodesignError, match="frozen"):
        plan_accelerator(load_bundle(bundle_dir).manifest, 2, target="up5k", spram=True)


def test_once_per_sequence_queues_are_shallow_on_chips() -> None:
    """A last layer's final vector and a once-per-sequence readout's results are written in the
    sequence's last step only: on a chip target their queues hold 2 entries (1 in memory), not 16
    (15 x 55 bits had taken 4 EBRs; 4 entries cost the same cycles); the generic RTL keeps 16. Bit-exactness: the golden tests
    of every target (a first step that is also the last, and long sequences, included)."""
    bundle = load_bundle(BUNDLES / "japanese_vowels_cmru2")
    for target, depth in (("up5k", 1), ("ecp5", 1), ("asic", 1), ("generic", 15)):
        plan = plan_accelerator(bundle.manifest, 2, target=target)
        assert plan.memory("layer1_entries").depth == depth and plan.memory("readout_results").depth == depth
        assert plan.memory("layer0_entries").depth == 15  # sends deltas every step
    per_step = random_network_manifest(
        inputs=3,
        layers=[{"cell": "cmru", "size": 4, "eps": 1}],
        classes=3,
        input_bits=4,
        pooling="last",
        per_step=True,
        seed=0,
    )
    plan = plan_accelerator(per_step, 2, target="up5k")  # a per-step readout: every step sends
    assert plan.memory("layer0_entries").depth == 15 and plan.memory("readout_results").depth == 15
    xs = [random_integer_inputs(bundle, sequences=1, steps=(1, 1), seed=5)[0]]
    xs += random_integer_inputs(bundle, sequences=3, steps=(12, 20), seed=5)
    assert_matches_golden(bundle, xs, lanes=2, seed=5, target="up5k", weights="frozen")


def test_frozen_plan_puts_small_roms_in_luts() -> None:
    bundle = load_bundle(BUNDLES / "spoken_digits_cmru")
    plan = plan_accelerator(bundle.manifest, 4, target="up5k", frozen=True)
    bias = plan.memory("layer0_bias")
    assert bias.rom and bias.config_id is None and bias.style == "logic"  # 8 x 128: 128 LUT4, no FFs
    assert not plan.memory("layer0_state").rom  # state is written every step
    assert (
        plan.shape_key()["frozen"] and plan_accelerator(bundle.manifest, 4).shape_key().get("frozen") is None
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), lanes=st.integers(1, 8), stalls=st.booleans(), runtime=st.booleans())
def test_random_family_bundles_match_golden(seed: int, lanes: int, stalls: bool, runtime: bool) -> None:
    bundle = random_family_bundle(seed)
    lanes = min(lanes, max(layer.size for layer in bundle.manifest.layers))
    xs = random_integer_inputs(bundle, sequences=3, steps=(1, 7), seed=seed)
    assert_matches_golden(
        bundle, xs, lanes=lanes, seed=seed if stalls else None, weights="runtime" if runtime else "baked"
    )


def test_every_cell_with_dcls_and_every_readout() -> None:
    """One directed design per cell kind behind a DCLS layer, with each readout mode."""
    readouts = [("last", False), ("sum", False), ("last", True)]
    for k, cell in enumerate(["cmru", "bmru", "alphacmru", "bgmingru", "mingru", "hsru"]):
        pooling, per_step = readouts[k % 3]
        first = {"cell": "cmru", "size": 5, "eps": 1, "dcls": {"taps": 3, "span": 5}}
        second = {"cell": cell, "size": 4, "dcls": {"taps": 2, "span": 3}}
        if cell in ("cmru", "alphacmru"):
            second["eps"] = -1
        manifest = random_network_manifest(
            inputs=3,
            layers=[first, second],
            classes=3,
            input_bits=4,
            pooling=pooling,
            per_step=per_step,
            seed=k,
        )
        bundle = Bundle(manifest, check_weights(manifest, random_network_weights(manifest, k)))
        xs = random_integer_inputs(bundle, sequences=2, steps=(6, 9), seed=k)
        assert_matches_golden(bundle, xs, lanes=2, seed=k)


def test_silent_and_saturating_sequences() -> None:
    """All-zero steps, a single step, and the input format's extremes on every feature."""
    bundle = load_bundle(BUNDLES / "japanese_vowels_cmru2")
    lo, hi = signed_range(bundle.manifest.input.bits)
    m = bundle.manifest.input.size
    xs = [
        np.zeros((5, m), dtype=np.int64),
        np.full((1, m), hi, dtype=np.int64),
        np.where(np.arange(12 * m).reshape(12, m) % 2, lo, hi).astype(np.int64),
    ]
    assert_matches_golden(bundle, xs, lanes=4)


def test_runtime_weights_build_serves_every_bundle_of_its_shape() -> None:
    """Two bundles of one shape give the same runtime-weight Verilog, and each runs right in it."""
    from amaranth.back import verilog

    layers = [
        {"cell": "alphacmru", "size": 3, "eps": -1},
        {"cell": "hsru", "size": 2, "dcls": {"taps": 2, "span": 3}},
    ]
    manifest = random_network_manifest(inputs=3, layers=layers, classes=2, input_bits=4, pooling="sum")
    bundles = [Bundle(manifest, check_weights(manifest, random_network_weights(manifest, s))) for s in (1, 2)]
    texts = [verilog.convert(Accelerator(b, lanes=2, weights="runtime"), name="accelerator") for b in bundles]
    assert texts[0] == texts[1]
    for k, bundle in enumerate(bundles):
        xs = random_integer_inputs(bundle, sequences=2, steps=5, seed=k)
        assert_matches_golden(bundle, xs, lanes=2, weights="runtime")


def test_sparse_steps_cost_fewer_cycles() -> None:
    bundle = load_bundle(BUNDLES / "spoken_digits_cmru")
    dense = random_integer_inputs(bundle, sequences=1, steps=30, seed=0, density=1.0)
    sparse = random_integer_inputs(bundle, sequences=1, steps=30, seed=0, density=0.1)
    assert simulate(bundle, sparse, lanes=2).cycles < 0.5 * simulate(bundle, dense, lanes=2).cycles


def test_item_beats_encode_non_zero_inputs_and_markers() -> None:
    x = np.array([[0, 3, 0], [0, 0, 0], [-1, 0, 2]])
    beats = item_beats([x])
    assert beats == [
        {"index": 1, "value": 3, "step_end": 1, "seq_end": 0},
        {"index": 0, "value": 0, "step_end": 1, "seq_end": 0},
        {"index": 0, "value": -1, "step_end": 0, "seq_end": 0},
        {"index": 2, "value": 2, "step_end": 1, "seq_end": 1},
    ]


def _extreme_bundle(cell: str, side: str) -> Bundle:
    layer = {"cell": cell, "size": 3, "weight_bits": 8, "bias_bits": 16, "state_bits": 16}
    if cell == "alphacmru":
        layer["eps"] = 1
    manifest = random_network_manifest(inputs=3, layers=[layer], classes=2, input_bits=8)
    weights = random_network_weights(manifest, 0)
    lo, hi = shift_bounds(accumulator_bits(manifest, 0))
    for name, (shape, bits) in array_table(manifest).items():
        if name.endswith("_shift"):
            weights[name] = np.full(shape, lo if side == "left" else hi)
        elif name.startswith(("layers.0.w_", "layers.0.b_")):
            a, b = signed_range(bits)
            weights[name] = np.where(np.arange(np.prod(shape)).reshape(shape) % 2, a, b)
    return Bundle(manifest, check_weights(manifest, weights))


@pytest.mark.parametrize("cell", ["alphacmru", "bgmingru", "mingru", "hsru"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_extreme_shifts_agree_in_golden_torch_and_rtl(cell: str, side: str) -> None:
    """The most negative and most positive shifts the spec allows, with extreme weights and inputs."""
    bundle = _extreme_bundle(cell, side)
    lo, hi = signed_range(8)
    x = np.array([[[lo, hi, lo], [hi, hi, hi], [lo, lo, lo], [0, 0, 0], [lo, 0, hi]]])
    gold = run_golden(bundle, x)
    assert_matches_golden(bundle, list(x), lanes=2)
    outs, _ = deployed_from_bundle(bundle).trace(torch.from_numpy(x * 2.0**-bundle.manifest.input.frac))
    frac = 0 if cell == "hsru" else bundle.manifest.layers[0].state_frac
    np.testing.assert_array_equal((outs[0] * 2.0**frac).numpy(), gold.layers[0].states.astype(np.float64))


def test_a_shift_beyond_the_bound_is_refused_naming_array_neuron_and_range() -> None:
    manifest = random_network_manifest(inputs=3, layers=[{"cell": "mingru", "size": 2}], classes=2)
    weights = random_network_weights(manifest, 0)
    lo, _ = shift_bounds(accumulator_bits(manifest, 0))
    weights["layers.0.gate_shift"] = np.array([0, lo - 1])
    with pytest.raises(CodesignError, match=rf"layers.0.gate_shift.*{lo - 1} at neuron 1.*\[{lo}, 63\]"):
        check_weights(manifest, weights)


def test_lanes_and_limits_are_named() -> None:
    bundle = load_bundle(BUNDLES / "spoken_digits_cmru")
    widest = max(layer.size for layer in bundle.manifest.layers)
    with pytest.raises(CodesignError, match=rf"lanes {widest + 1} is outside the allowed range 1..{widest}"):
        Accelerator(bundle, lanes=widest + 1)
    with pytest.raises(CodesignError, match=r"weights must be one of baked, runtime"):
        Accelerator(bundle, lanes=1, weights="flash")
    manifest = random_network_manifest(
        inputs=4096,
        layers=[{"cell": "cmru", "size": 2, "eps": 1, "dcls": {"taps": 1, "span": 4096}}],
        classes=2,
    )
    with pytest.raises(CodesignError, match=r"layers.0.dcls.span: 4096 x 4096 channels .* hardware limit"):
        plan_accelerator(manifest, 1)


def test_faults_are_validated() -> None:
    bundle = load_bundle(BUNDLES / "parity_hsru")
    with pytest.raises(CodesignError, match="unknown fault"):
        Accelerator(bundle, faults={"off_by_two"})


def test_hard_multipliers_a_product_takes() -> None:
    """yosys' mul2dsp slices operands wider than the hard multiplier and leaves a last slice of one
    bit to logic: 8 x 24 takes two SB_MAC16 (measured: the readout lane's 2 DSPs), 8 x 17 one."""
    up5k, ecp5 = get_target("up5k"), get_target("ecp5")
    assert up5k.multiplies_needed(8, 24) == 2
    assert up5k.multiplies_needed(8, 17) == 1
    assert up5k.multiplies_needed(8, 16) == 1
    assert up5k.multiplies_needed(18, 26) == 4
    assert ecp5.multiplies_needed(8, 24) == 2 and ecp5.multiplies_needed(8, 18) == 1


@pytest.mark.parametrize("cell", ["alphacmru", "bgmingru", "mingru", "hsru"])
@pytest.mark.parametrize("shifts", [(5, 5, 5), (-3, 0, 7), (-4, -2, -1), (2, 9, 4)])
def test_frozen_shifters_cover_exactly_the_shifts_of_the_rom(cell: str, shifts: tuple[int, int, int]) -> None:
    """A frozen build's update units shift over the range its ROM holds, not the spec's -26 .. 63
    (each minGRU unit of the d = 12 DCLS network took 904 LUT4 on the UP5K): one shared shift is
    wiring, a few values a short shifter; with lanes past ``d`` (3 neurons, P = 2) 0 joins the
    range. Extreme weights and inputs, so a missing shift or a short left shift changes states."""
    bundle = _extreme_bundle(cell, "right")
    for name in bundle.weights:
        if name.endswith("_shift"):
            bundle.weights[name] = np.array(shifts)
    bundle = Bundle(bundle.manifest, check_weights(bundle.manifest, bundle.weights))
    lo, hi = signed_range(8)
    xs = [np.array([[lo, hi, lo], [hi, hi, hi], [lo, lo, lo], [0, 0, 0], [lo, 0, hi]])]
    ranges = frozen_shift_ranges(bundle.manifest, {0: bundle.layer_weights(0)})
    assert ranges == {0: (min(shifts), max(shifts))}
    layer = plan_accelerator(bundle.manifest, 2, frozen=True, shift_ranges=ranges).layers[0]
    assert (layer.shift_lo, layer.shift_hi) == (min(min(shifts), 0), max(max(shifts), 0))
    layer = plan_accelerator(bundle.manifest, 3, frozen=True, shift_ranges=ranges).layers[0]
    assert (layer.shift_lo, layer.shift_hi) == ranges[0]
    for lanes in (2, 3):
        assert_matches_golden(bundle, xs, lanes=lanes, weights="frozen", target="up5k")
    with pytest.raises(CodesignError, match="only a frozen build"):
        plan_accelerator(bundle.manifest, 2, shift_ranges={0: (0, 1)})
    with pytest.raises(CodesignError, match=r"layer0: shifts -99 \.\. 1 are outside"):
        plan_accelerator(bundle.manifest, 3, frozen=True, shift_ranges={0: (-99, 1)})


@pytest.mark.parametrize(
    ("share", "weights", "passes", "target"),
    [
        ("auto:4", "frozen", [8, 2], "up5k"),
        ("on:2", "baked", [4, 2], "up5k"),
        ("off:4", "runtime", [4, 1], "up5k"),
        ("on:4", "baked", [8, 6], "generic"),
    ],
)
def test_digit_serial_lut_products_match_golden(
    share: str, weights: str, passes: list[int], target: str
) -> None:
    """``--share-multipliers X:K``: an engine whose weight products are all LUT multipliers adds
    each in ``K`` Booth-digit pieces on successive cycles (``K`` times the passes, in the cycle
    model's ``passes``), its first piece from the seed; the sums stay the golden model's, with
    stalls, and engines with hard multipliers keep one cycle per product."""
    manifest = random_network_manifest(
        inputs=5,
        layers=[
            {"cell": "cmru", "size": 6, "eps": 1, "weight_bits": 8},
            {"cell": "mingru", "size": 6, "weight_bits": 6},
        ],
        classes=3,
        seed=5,
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 5))
    plan = plan_accelerator(manifest, 6, target=target, share=share)
    assert [e.passes for e in plan.layers] == passes
    if target == "up5k":
        assert plan.layers[0].multiplier == "lut" and plan.layers[1].digit_passes == 1
    else:  # every engine: 8-bit weights in 4 pieces, 6-bit ones in 3
        assert [e.digit_passes for e in plan.layers] == [4, 3]
    assert plan.share == parse_share(share)[0] and plan.shape_key()["share"] == plan.share
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 6), seed=5)
    assert_matches_golden(bundle, xs, lanes=6, seed=5, target=target, weights=weights, share=share)


def test_digit_serial_cycles_are_named_and_split_the_booth_digits() -> None:
    from codesign.hw.plan import _digit_passes, serial_cycles

    assert serial_cycles("auto:4") == 4 and serial_cycles("auto") == 1 and parse_share("on:2") == ("1:2", 1)
    assert [_digit_passes(8, k) for k in (1, 2, 4)] == [1, 2, 4]
    assert [_digit_passes(6, k) for k in (1, 2, 4)] == [1, 1, 3]  # 3 digits: 1 or 3 pieces
    assert _digit_passes(4, 4) == 2
    manifest = random_network_manifest(inputs=5, layers=[{"cell": "cmru", "size": 6}], classes=3, seed=5)
    # generic (and asic): the tool maps one-cycle products; with :K every engine's are serial
    assert plan_accelerator(manifest, 6, share="auto:4").layers[0].digit_passes == 4
    assert plan_accelerator(manifest, 6, share="auto").layers[0].digit_passes == 1
    for bad in ("auto:3", "on:x", "2:0"):
        with pytest.raises(CodesignError, match=rf"--share-multipliers '{bad}'.*one of 1, 2, 4"):
            plan_accelerator(manifest, 6, share=bad)


def test_frozen_dcls_taps_are_roms() -> None:
    """A frozen build holds the DCLS taps in ROMs too (no configuration target, no write port):
    the d = 12 DCLS network at P = 2 spent 4 of the UP5K's 30 EBRs on 608 bits of loadable taps.
    The outputs stay the golden model's."""
    manifest = random_network_manifest(
        inputs=7,
        layers=[
            {"cell": "mingru", "size": 4, "weight_bits": 8, "dcls": {"taps": 2, "span": 4, "weight_bits": 8}},
            {"cell": "cmru", "size": 4, "eps": 1, "dcls": {"taps": 3, "span": 5, "weight_bits": 6}},
        ],
        classes=3,
        seed=9,
    )
    bundle = Bundle(manifest=manifest, weights=random_network_weights(manifest, 9))
    plan = plan_accelerator(manifest, 2, target="up5k", frozen=True)
    for name in ("layer0_dcls_taps", "layer1_dcls_taps"):
        taps = plan.memory(name)
        assert taps.rom and taps.config_id is None and taps.style == "logic"
        assert not plan_accelerator(manifest, 2, target="up5k").memory(name).rom
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 7), seed=9)
    for target in ("up5k", "generic"):
        assert_matches_golden(bundle, xs, lanes=2, seed=9, target=target, weights="frozen")


def test_dcls_counts_take_a_block_ram_per_tap() -> None:
    """A DCLS front end reads its slot counts on one port per tap, so block RAM holds a copy per
    tap: the d = 12 DCLS network at P = 2 (``--narrow auto``) placed 31 EBRs where the plan had
    counted 30, its 4 x 4-bit counts in two."""
    manifest = random_network_manifest(
        inputs=7,
        layers=[
            {"cell": "mingru", "size": 12, "dcls": {"taps": 2, "span": 4}},
            {"cell": "cmru", "size": 12, "eps": 1, "dcls": {"taps": 2, "span": 4}},
        ],
        classes=5,
        seed=1,
    )
    plan = plan_accelerator(manifest, 2, target="up5k", frozen=True, spram=True, share="1", narrow="auto")
    counts = plan.memory("layer1_dcls_counts")
    assert counts.banks == 2
    chip = get_target("up5k")
    banks = {m.name: m.banks for m in plan.memories}
    styled = chip.map_memories({counts.name: (counts.depth, counts.width)}, banks=banks)
    assert styled[counts.name] == "block"
    used = sum(
        m.banks * chip.blocks_for(m.depth, -(-m.width // m.banks))
        for m in plan.memories
        if m.style == "block"
    )
    assert used <= chip.block_rams - chip.reserved_block_rams


def test_a_schedule_read_combinationally_never_goes_to_block_ram() -> None:
    """The selective schedule (``su_walk``, ``su_open``) is read through asynchronous ports, which
    no block RAM has: the UP5K (no LUT RAM) holds it in logic, the ECP5 in LUT RAM or logic, and a
    build for no chip marks it ``logic`` so that ``codesign synth --ram block`` leaves it there.
    The UP5K plan of japanese_vowels_cmru2_su at P = 1 put ``su_walk`` in block RAM, where yosys
    found no valid mapping."""
    manifest = load_bundle(BUNDLES / "japanese_vowels_cmru2_su").manifest
    for target, allowed in (("up5k", {"logic"}), ("ecp5", {"logic", "distributed"})):
        plan = plan_accelerator(manifest, 1, target=target)
        schedule = [m for m in plan.memories if "_su_" in m.name]
        assert schedule and all(m.asynchronous for m in schedule)
        assert {m.style for m in schedule} <= allowed, (target, [(m.name, m.style) for m in schedule])
    generic = plan_accelerator(manifest, 1)
    for m in generic.memories:
        assert (m.attrs or {}).get("ram_style") == ("logic" if "_su_" in m.name else None), m.name
    # and the cost model counts them as synthesis makes them: logic, not block RAM
    from codesign.hw.cost import count_blocks, get_device

    up5k = get_device("up5k")
    without = replace(generic, memories=tuple(m for m in generic.memories if "_su_" not in m.name))
    assert count_blocks(generic, up5k) == count_blocks(without, up5k)
    chip = get_target("up5k")
    assert chip.map_memories({"walk": (40, 3)}, asynchronous={"walk"}) == {"walk": "logic"}
    assert chip.map_memories({"walk": (40, 3)}) == {"walk": "block"}


def test_block_rams_go_where_they_save_the_most_logic() -> None:
    """The plan fills the block RAMs it keeps (an exact knapsack): the greedy rule moved the
    cheapest memories per block out until the rest fit and overshot, leaving the d = 12 DCLS
    network at P = 2 with 4 of 29 EBRs empty and both states in flip-flops."""
    from codesign.hw.targets import _fill_blocks

    blocks = {"acc": 9, "state0": 2, "state1": 2, "items": 2, "zbuf": 4}
    cost = {"acc": 2232, "state0": 496, "state1": 496, "items": 710, "zbuf": 8025}
    assert sorted(_fill_blocks(list(blocks), blocks, cost, 12)) == ["items", "state0", "state1", "zbuf"]
    assert sorted(_fill_blocks(list(blocks), blocks, cost, 13)) == ["acc", "zbuf"]
    assert _fill_blocks(list(blocks), blocks, cost, 1) == []
    manifest = load_bundle(BUNDLES / "japanese_vowels_cmru2").manifest
    chip = get_target("up5k")
    plan = plan_accelerator(manifest, 2, target="up5k", frozen=True, share="auto")
    used = sum(chip.blocks_for(m.depth, m.width) for m in plan.memories if m.style == "block")
    assert used == chip.block_rams - chip.reserved_block_rams


@pytest.mark.parametrize(
    ("name", "lanes", "target", "weights", "share", "narrow"),
    [
        ("japanese_vowels_cmru2", 2, "ecp5", "runtime", "off", "off"),  # parameters, biases written by config
        (
            "japanese_vowels_cmru2",
            2,
            "ecp5",
            "frozen",
            "off",
            "off",
        ),  # parameter ROMs ride along as initial values
        ("japanese_vowels_cmru2", 4, "generic", "runtime", "1", "auto"),  # folded: slice by slice
        (
            "spoken_digits_mingru",
            4,
            "generic",
            "baked",
            "off",
            "off",
        ),  # no block RAMs to count: every writable part
    ],
)
def test_merged_memories_match_golden(
    name: str, lanes: int, target: str, weights: str, share: str, narrow: str
) -> None:
    """``--merge auto``: the parameters, state and pooled sums an engine reads on a group's last
    slot, and the biases and kept sums it reads on a group's first, each side by side in one
    physical word with a write enable per slice: the same states, logits, cycles and memory reads
    and writes (each part's own) as with a memory each."""
    bundle = load_bundle(BUNDLES / name)
    frozen = weights == "frozen"
    options = {"target": target, "frozen": frozen, "share": share, "narrow": narrow}
    merged = plan_accelerator(bundle.manifest, lanes, merge="auto", **options)
    apart = plan_accelerator(bundle.manifest, lanes, **options)
    physical = merged.physical_memories()
    assert physical and not apart.physical_memories()
    for phys, parts in physical.items():
        engine, group = phys.rsplit("_", 1)
        keys = [p.name.removeprefix(f"{engine}_") for p in parts]
        assert set(keys) <= set(MERGED_KEYS[group]) and len(keys) >= 2
        assert len({(p.depth, p.fold, p.style) for p in parts}) == 1
        assert [p.offset for p in parts] == [sum(q.width for q in parts[:i]) for i in range(len(parts))]
    if frozen:  # a ROM joins only where the word takes no more block RAMs: here it does not
        assert all(any(p.rom for p in parts) for parts in physical.values())
    if narrow != "off":
        assert {p.fold for parts in physical.values() for p in parts} == {2}
    assert merged.shape_key()["merge"] == "auto" and "merge" not in apart.shape_key()
    xs = random_integer_inputs(bundle, sequences=2, steps=(2, 5), seed=5)
    got = assert_matches_golden(
        bundle,
        xs,
        lanes=lanes,
        seed=5,
        target=target,
        weights=weights,
        share=share,
        narrow=narrow,
        merge="auto",
    )
    ref = simulate(
        bundle, xs, lanes=lanes, seed=5, target=target, weights=weights, share=share, narrow=narrow
    )
    assert got.cycles == ref.cycles
    assert got.counters == ref.counters  # every memory's reads and writes too


def test_merge_takes_a_block_ram_only_where_it_saves_one(tmp_path: Path) -> None:
    """The d = 256, 256-input CMRU on the ECP5: 8-bit parameters and 16-bit state words, 256 deep,
    merge into one 24-bit word of one DP16KD (apart: two memories the plan put in LUT RAM). On
    the UP5K (EBRs 16 bits wide) JapaneseVowels' layer 1 state and pooled sums take as many EBRs
    merged as apart, and at P = 8 the d = 256 words as much LUT RAM: neither merges. ``build.json``
    records what shares which word (on the ECP5 layer 1's biases and kept sums share one too)."""
    manifest = random_network_manifest(
        inputs=256, layers=[{"cell": "cmru", "size": 256, "weight_bits": 4}], classes=10, seed=1
    )
    plan = plan_accelerator(manifest, 1, target="ecp5", counters="none", merge="auto")
    (parts,) = plan.physical_memories().values()
    assert [(p.name, p.offset, p.width) for p in parts] == [("layer0_params", 0, 8), ("layer0_state", 8, 16)]
    assert {p.style for p in parts} == {"block"}
    assert get_target("ecp5").blocks_for(256, 24) == 1
    jv = load_bundle(BUNDLES / "japanese_vowels_cmru2")
    up5k = plan_accelerator(
        jv.manifest, 2, target="up5k", frozen=True, spram=True, share="auto", merge="auto"
    )
    assert not up5k.physical_memories()  # 8 x 32 and 8 x 48 bits: 5 EBRs apart, 5 merged
    big8 = plan_accelerator(manifest, 8, target="ecp5", counters="none", merge="auto")
    assert not big8.physical_memories()  # 32 x 64 and 32 x 128 bits: the same either way
    with pytest.raises(CodesignError, match="--merge 'yes' is not one of off, auto"):
        plan_accelerator(manifest, 1, merge="yes")
    from codesign.hw.build import build_rtl

    info = build_rtl(BUNDLES / "japanese_vowels_cmru2", tmp_path / "b", lanes=2, target="ecp5", merge="auto")
    physical = info["plan"]["physical"]
    assert info["plan"]["merge"] == "auto" and set(physical) == {
        "layer1_held",
        "layer1_seeds",
    }  # layer 0: 48 bits take 2 blocks either way
    held = physical["layer1_held"]
    assert [p["name"] for p in held["parts"]] == ["layer1_params", "layer1_state", "layer1_pool"]
    assert held["width"] == sum(p["width"] for p in held["parts"]) and held["depth"] == 8
    shared = {m["name"]: m["shared"] for m in info["plan"]["memories"]}
    assert shared["layer1_pool"] == "layer1_held" and shared["layer1_weights"] is None
    assert [p["name"] for p in physical["layer1_seeds"]["parts"]] == ["layer1_bias", "layer1_acc"]
