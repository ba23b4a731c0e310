"""A lone eps-1 CMRU layer cannot read the order of its frames, and a series recipe with one is told.

The claim behind the warning is checked against the network itself: its logits are the same for
every permutation of the frames (hypothesis draws the weights, the series and the permutation),
and the default two-layer stack's are not."""

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.nn.hardware import HardwareStack
from codesign.train.advice import OrderBlindWarning, order_blind, warn_if_order_blind
from codesign.train.recipe import parse_recipe

MINIMAL = {
    "name": "minimal",
    "task": {"name": "uea", "dataset": "GunPoint"},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 16},
}
DEFAULT_LAYERS = [{"cell": "mingru", "size": 16}, {"cell": "cmru", "size": 16, "eps": 1.0}]


def _logits(layers: list[dict], pooling: str, seed: int, frames: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of a random stack for random series, and for the same series with shuffled frames."""
    torch.manual_seed(seed)
    stack = HardwareStack(2, 3, layers, pooling=pooling).double().eval()
    x = torch.randn(4, frames, 2, dtype=torch.float64)
    perm = torch.randperm(frames)
    with torch.no_grad():
        return stack(x), stack(x[:, perm])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    frames=st.integers(2, 40),
    cell=st.sampled_from(["cmru", "alphacmru"]),
)
def test_a_lone_eps_1_cmru_layer_gives_the_same_logits_for_any_order_of_frames(
    seed: int, frames: int, cell: str
) -> None:
    layers = [{"cell": cell, "size": 8, "eps": 1.0}]
    assert order_blind(layers, "last") is not None
    original, shuffled = _logits(layers, "last", seed, frames)
    torch.testing.assert_close(original, shuffled, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("layers", "pooling"),
    [(DEFAULT_LAYERS, "last"), ([{"cell": "cmru", "size": 8, "eps": 1.0}], "sum")],
    ids=["two-layers", "sum-pooling"],
)
def test_a_second_layer_or_sum_pooling_reads_the_order(layers: list[dict], pooling: str) -> None:
    assert order_blind(layers, pooling) is None
    original, shuffled = _logits(layers, pooling, seed=0, frames=30)
    assert (original - shuffled).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("layers", "pooling"),
    [
        (DEFAULT_LAYERS, "last"),
        ([{"cell": "cmru", "size": 16, "eps": 0.0}], "last"),  # reset on update: the last event wins
        ([{"cell": "cmru", "size": 16, "eps": -1.0}], "last"),  # reflection
        ([{"cell": "bmru", "size": 16}], "last"),
        ([{"cell": "mingru", "size": 16}], "last"),
        ([{"cell": "cmru", "size": 16, "eps": 1.0, "dcls": {"taps": 4, "span": 16}}], "last"),
        ([{"cell": "cmru", "size": 16, "eps": 1.0, "selective": {"period": 4}}], "last"),
        ([{"cell": "cmru", "size": 16, "eps": 1.0}], "none"),  # per-step logits see every prefix
    ],
)
def test_networks_that_read_the_order_are_not_flagged(layers: list[dict], pooling: str) -> None:
    assert order_blind(layers, pooling) is None


def test_a_lone_layer_kept_alone_warns_and_the_defaults_do_not() -> None:
    alone = dict(MINIMAL, model={**MINIMAL["model"], "cell_options": {"dcls": None}})
    with pytest.warns(OrderBlindWarning, match="Put a minGRU layer in front"):
        warn_if_order_blind(parse_recipe(alone))
    stack = dict(MINIMAL, model={"arch": "hardware", "layers": DEFAULT_LAYERS})
    synthetic = dict(MINIMAL, task={"name": "copy_first"})  # a synthetic task may want a count
    with warnings.catch_warnings():
        warnings.simplefilter("error", OrderBlindWarning)
        warn_if_order_blind(parse_recipe(MINIMAL))  # the series defaults give it a DCLS front end
        warn_if_order_blind(parse_recipe(stack))
        warn_if_order_blind(parse_recipe(synthetic))
