"""The strided-mean input front end (``input.stride``) through the software chain.

The integer rule (``docs/integer-semantics.md``) against a plain reference, the torch module on
the input grid against the rule, the deployed torch model against the golden model, the recipe
key, the manifest field and the refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle import Bundle
from codesign.bundle.io import check_weights, load_bundle, parse_manifest, save_bundle
from codesign.bundle.spine import spine_view
from codesign.errors import CodesignError
from codesign.golden import quantize_inputs, run_golden
from codesign.golden.model import stride_frames
from codesign.nn.hardware import HardwareStack
from codesign.nn.stride import InputStride
from codesign.quant import deployed_from_bundle, quantize_stack
from codesign.quant.qat import add_fake_quant, remove_fake_quant
from codesign.train.recipe import parse_recipe

STRIDES = st.sampled_from([1, 2, 4, 8, 16])


def reference(xq: np.ndarray, stride: int) -> np.ndarray:
    """Window by window in Python integers: sum the frames present, floor-divide by S."""
    n, steps, m = xq.shape
    out = []
    for s in range(n):
        rows = []
        for start in range(0, steps, stride):
            window = xq[s, start : start + stride]
            rows.append([int(sum(int(v) for v in window[:, j])) // stride for j in range(m)])
        out.append(rows)
    return np.asarray(out, dtype=np.int64).reshape(n, -(-steps // stride), m)


@settings(max_examples=60, deadline=None)
@given(
    stride=STRIDES,
    steps=st.integers(1, 40),
    m=st.integers(1, 4),
    bits=st.integers(2, 12),
    seed=st.integers(0, 2**31 - 1),
)
def test_integer_rule_is_floor_of_the_window_mean(stride, steps, m, bits, seed) -> None:
    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    xq = rng.integers(lo, hi + 1, size=(3, steps, m))
    got = stride_frames(xq, stride)
    assert np.array_equal(got, reference(xq, stride))
    assert got.min() >= lo and got.max() <= hi  # the mean stays in the input format


@settings(max_examples=60, deadline=None)
@given(stride=STRIDES, steps=st.integers(1, 40), frac=st.integers(-3, 6), seed=st.integers(0, 2**31 - 1))
def test_torch_on_the_grid_is_the_integer_rule(stride, steps, frac, seed) -> None:
    rng = np.random.default_rng(seed)
    xq = rng.integers(-128, 128, size=(2, steps, 3))
    x = torch.from_numpy(xq * 2.0**-frac)
    got = InputStride(stride, frac)(x) * 2.0**frac
    assert np.array_equal(got.numpy(), stride_frames(xq, stride).astype(np.float64))


def test_float_mean_and_straight_through_gradient() -> None:
    x = torch.arange(10.0).reshape(1, 5, 2).requires_grad_()
    y = InputStride(2)(x)
    assert y.shape == (1, 3, 2)
    assert torch.equal(y[0, :, 0].detach(), torch.tensor([1.0, 5.0, 4.0]))  # last window: (8 + 0) / 2
    InputStride(2, frac=0)(x).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 0.5))


def quantized(model: HardwareStack, x: torch.Tensor, frac: int = 3) -> Bundle:
    manifest, weights = quantize_stack(
        model,
        name="strided",
        input_bits=8,
        input_frac=frac,
        layer_formats=[{"weight_bits": 6, "alpha_bits": 6, "state_bits": 12}] * len(model.cells),
        readout_formats={},
        calibration=x,
    )
    return Bundle(manifest, check_weights(manifest, weights))


LAYERS = st.sampled_from(
    [
        [{"cell": "cmru", "size": 4, "eps": 1.0}],
        [{"cell": "mingru", "size": 3}, {"cell": "hsru", "size": 3, "leak_shift": 2}],
        [{"cell": "bgmingru", "size": 3, "dcls": {"taps": 2, "span": 4}}],
        [{"cell": "alphacmru", "size": 3, "eps": 1.0, "selective": {"period": 4}}],
    ]
)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    stride=st.sampled_from([2, 4, 8]),
    layers=LAYERS,
    pooling=st.sampled_from(["last", "sum"]),
    steps=st.integers(1, 45),
)
def test_deployed_torch_equals_golden(seed, stride, layers, pooling, steps) -> None:
    torch.manual_seed(seed)
    model = HardwareStack(3, 3, layers, pooling=pooling, input_stride=stride)
    x = torch.randint(-40, 40, (5, steps, 3)).double() / 8.0
    bundle = quantized(model, x)
    assert bundle.manifest.input.stride == stride
    xq = quantize_inputs(bundle, x.numpy())
    gold = run_golden(bundle, xq)
    assert gold.layers[0].states.shape[1] == -(-steps // stride)
    deployed = deployed_from_bundle(bundle)
    outs, _ = deployed.trace(x)
    for out, layer, trace in zip(outs, bundle.manifest.layers, gold.layers, strict=True):
        frac = 0 if layer.cell == "hsru" else layer.state_frac
        assert np.array_equal((out * 2.0**frac).numpy(), trace.states.astype(np.float64))
    assert np.array_equal(deployed.integer_logits(x), gold.logits)


def test_qat_forward_is_the_deployed_rule() -> None:
    """Under QAT the stride floors on the input grid; baked, the float model is the plain mean."""
    torch.manual_seed(0)
    model = HardwareStack(3, 2, [{"cell": "cmru", "size": 4, "eps": 0.0}], input_stride=4)
    add_fake_quant(model, 8, 8, input_frac=3, input_bits=8)
    assert model.stride.frac == 3
    x = torch.randn(2, 13, 3)
    grid = torch.floor(x * 8 + 0.5).clamp(-128, 127)
    want = torch.from_numpy(stride_frames(grid.long().numpy(), 4) / 8.0).float()
    seen = []
    model.cells[0].register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
    model(x)
    assert torch.equal(seen[0], want)
    remove_fake_quant(model)
    assert model.stride.frac is None


def test_stride_one_changes_nothing(tmp_path) -> None:
    """Stride 1 is not written: a bundle without a stride reads and writes without the key."""
    torch.manual_seed(1)
    x = torch.randn(4, 9, 3)
    bundle = quantized(HardwareStack(3, 2, [{"cell": "cmru", "size": 4}]), x)
    saved = save_bundle(tmp_path / "b", bundle.manifest, bundle.weights)
    text = (tmp_path / "b" / "manifest.yaml").read_text()
    assert "stride:" not in text
    assert load_bundle(saved.path).manifest.input.stride == 1
    strided = quantized(HardwareStack(3, 2, [{"cell": "cmru", "size": 4}], input_stride=2), x)
    save_bundle(tmp_path / "s", strided.manifest, strided.weights)
    data = yaml.safe_load((tmp_path / "s" / "manifest.yaml").read_text())
    assert data["input"]["stride"] == 2
    assert load_bundle(tmp_path / "s").manifest.input.stride == 2


def manifest_data(**input_keys) -> dict:
    return {
        "format_version": 2,
        "name": "m",
        "input": {"size": 2, **input_keys},
        "layers": [{"cell": "cmru", "size": 3}],
        "readout": {"classes": 2},
    }


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"stride": 3}, r"input.stride: stride must be a power of two .* \(got 3\)"),
        ({"stride": 512}, r"input.stride: .*less than or equal to 256"),
        ({"stride": 0}, r"input.stride: .*greater than or equal to 1"),
    ],
)
def test_manifest_refuses_bad_strides(keys, message) -> None:
    with pytest.raises(CodesignError, match=message):
        parse_manifest(manifest_data(**keys))


def test_manifest_refuses_stride_with_per_step_readout() -> None:
    data = manifest_data(stride=4) | {"readout": {"classes": 2, "per_step": True}}
    with pytest.raises(CodesignError, match="per_step readout needs a label at every input frame"):
        parse_manifest(data)


def test_spine_back_ends_refuse_a_stride() -> None:
    manifest = parse_manifest(manifest_data(stride=2))
    rng = np.random.default_rng(0)
    weights = {
        "layers.0.w_cand": rng.integers(-8, 8, (3, 2)),
        "layers.0.b_cand": np.zeros(3, dtype=np.int64),
        "layers.0.w_thr": rng.integers(-8, 8, (3, 2)),
        "layers.0.b_thr": np.zeros(3, dtype=np.int64),
        "layers.0.alpha": np.ones(3, dtype=np.int64),
        "readout.weight": rng.integers(-8, 8, (2, 3)),
        "readout.bias": np.zeros(2, dtype=np.int64),
    }
    with pytest.raises(CodesignError, match=r"input stride 2 \(supported: 1\)"):
        spine_view(Bundle(manifest, check_weights(manifest, weights)))


RECIPE = {
    "name": "r",
    "task": {"name": "parity"},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 4},
}


def test_recipe_key() -> None:
    assert parse_recipe(RECIPE).model.input_stride == 1
    assert parse_recipe({**RECIPE, "model": {**RECIPE["model"], "input_stride": 8}}).model.input_stride == 8
    with pytest.raises(CodesignError, match="model.input_stride must be auto or a power of two"):
        parse_recipe({**RECIPE, "model": {**RECIPE["model"], "input_stride": 6}})
    with pytest.raises(CodesignError, match="input_stride"):
        parse_recipe({**RECIPE, "model": {**RECIPE["model"], "input_stride": 512}})
    with pytest.raises(CodesignError, match="hardware-profile option"):
        parse_recipe({**RECIPE, "model": {"arch": "backbone", "input_stride": 2}})


def test_per_step_model_refuses_a_stride() -> None:
    with pytest.raises(ValueError, match="per-step .* needs a label at every frame"):
        HardwareStack(2, 2, [{"cell": "cmru", "size": 3}], per_step=True, input_stride=2)


def test_recipe_with_a_per_step_task_refuses_a_stride() -> None:
    from codesign.train.models import build_model
    from codesign.train.trainer import make_recipe_task

    recipe = parse_recipe(
        {**RECIPE, "task": {"name": "flip_flop"}, "model": {**RECIPE["model"], "input_stride": 2}}
    )
    with pytest.raises(CodesignError, match="task 'flip_flop' labels every frame: use input_stride 1"):
        build_model(recipe, make_recipe_task(recipe))


def test_random_bundle_command_takes_a_stride(tmp_path) -> None:
    from typer.testing import CliRunner

    from codesign.cli import app

    runner = CliRunner()
    res = runner.invoke(
        app, ["random-bundle", "--out", str(tmp_path / "b"), "--d", "3", "--input-stride", "4"]
    )
    assert res.exit_code == 0, res.output
    assert load_bundle(tmp_path / "b").manifest.input.stride == 4
    res = runner.invoke(
        app, ["random-bundle", "--out", str(tmp_path / "c"), "--input-stride", "2", "--per-step"]
    )
    assert res.exit_code == 2 and "per_step readout needs a label at every input frame" in res.output


def test_layer_steps_count_windows() -> None:
    from codesign.train.trainer import layer_steps

    layers = [{"cell": "cmru", "size": 3}]
    assert layer_steps(HardwareStack(2, 2, layers, input_stride=4), 9) == 3
    assert layer_steps(HardwareStack(2, 2, layers, input_stride=4), 8) == 2
    assert layer_steps(HardwareStack(2, 2, layers), 9) == 9


def test_auto_stride_follows_the_series_length() -> None:
    from codesign.nn.stride import auto_stride
    from codesign.train.recipe import parse_recipe

    assert [auto_stride(n) for n in (24, 150, 427, 1460)] == [1, 2, 4, 16]
    spec = parse_recipe(
        {
            "name": "a",
            "task": {"name": "uea", "dataset": "GunPoint"},
            "model": {"cell": "cmru", "input_stride": "auto"},
        }
    ).model
    assert spec.stride_for(427) == 4 and spec.stride_for(None) == 1
