"""Generated tasks: the Task protocol, shapes, determinism and label correctness on small instances."""

from __future__ import annotations

import pytest
import torch

from codesign.data.base import IGNORE_INDEX, Task
from codesign.data.copy_first_continuous import CopyFirstContinuous, CopyFirstNoisy
from codesign.data.copying import CopyingMemory, SelectiveCopying
from codesign.data.echo import DelayedEcho
from codesign.data.flip_flop import SYMBOLS, FlipFlop, read_mask
from codesign.data.high_frequency import HighFrequencyPatterns
from codesign.data.parity import Parity, TemporalParity
from codesign.data.registry import TASKS
from codesign.errors import CodesignError
from codesign.train.recipe import build_task

SMALL = {
    "copy_first_continuous": {"length": 20, "val_size": 16, "test_size": 16},
    "copy_first_noisy": {"length": 20, "val_size": 16, "test_size": 16},
    "parity": {
        "train_min_length": 5,
        "train_max_length": 12,
        "test_min_length": 5,
        "test_max_length": 30,
        "val_size": 32,
        "test_size": 32,
    },
    "temporal_parity": {"val_size": 16, "test_size": 16},
    "flip_flop": {"length": 64, "val_size": 16, "test_size": 16},
    "selective_copying": {"length": 40, "num_tokens": 4, "vocab": 6, "val_size": 16, "test_size": 16},
    "copying_memory": {"delay": 15, "prefix": 4, "val_size": 16, "test_size": 16},
    "delayed_echo": {"length": 30, "delay": 3, "val_size": 16, "test_size": 16},
    "high_frequency": {"val_size": 16, "test_size": 16},
}


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_registry_keeps_copy_first_and_lists_every_task():
    expected = {
        "copy_first", "copy_first_continuous", "copy_first_noisy", "parity", "temporal_parity",
        "flip_flop", "selective_copying", "copying_memory", "delayed_echo", "high_frequency",
        "lorenz", "mackey_glass", "uea", "mnist1d", "sklearn_digits", "spoken_digits",
    }  # fmt: skip
    assert expected <= set(TASKS)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_protocol_shapes_and_determinism(name):
    task = build_task(name, SMALL[name])  # through the recipe validator, like a recipe would
    assert isinstance(task, Task)
    x, y = task.sample(8, gen(1))
    assert x.dtype == torch.float32 and x.ndim == 3 and x.shape[0] == 8 and x.shape[2] == task.input_size
    if task.kind == "classification":
        assert y.dtype == torch.int64
        assert y.shape == ((8,) if task.target == "last" else (8, x.shape[1]))
        labelled = y[y != IGNORE_INDEX]
        assert len(labelled) > 0 and labelled.min() >= 0 and labelled.max() < task.output_size
    else:
        assert y.dtype == torch.float32
        assert y.shape == (
            (8, task.output_size) if task.target == "last" else (8, x.shape[1], task.output_size)
        )
    x2, y2 = task.sample(8, gen(1))
    assert torch.equal(x, x2) and torch.equal(y, y2)
    x3, _ = task.sample(8, gen(2))
    assert not torch.equal(x, x3)
    xv, yv = task.split("val", 0)
    xv2, yv2 = task.split("val", 0)
    xt, _ = task.split("test", 0)
    assert torch.equal(xv, xv2) and torch.equal(yv, yv2)
    assert not torch.equal(xv[:, : xt.shape[1]][: len(xt)], xt[:, : xv.shape[1]][: len(xv)])
    assert not torch.equal(task.split("val", 1)[0], xv)


def test_copy_first_continuous_clean_and_noisy():
    x, y = CopyFirstContinuous(length=30).sample(64, gen())
    assert torch.equal(y[:, 0], x[:, 0, 0]) and (x[:, 1:] == 0).all()
    assert y.abs().max() <= 1 and y.std() > 0.3
    x, y = CopyFirstNoisy(length=30).sample(64, gen())
    assert torch.equal(y[:, 0], x[:, 0, 0])
    assert x.abs().max() <= 1 and x[:, 1:].std() > 0.4


def test_parity_labels_lengths_and_padding():
    task = Parity(
        train_min_length=5,
        train_max_length=9,
        test_min_length=3,
        test_max_length=20,
        val_size=200,
        test_size=200,
        distractors=2,
    )
    lengths = set()
    for s in range(20):
        x, y = task.sample(16, gen(s))
        assert 5 <= x.shape[1] <= 9 and x.shape[2] == 3
        lengths.add(x.shape[1])
        for row, label in zip(x, y, strict=True):
            assert int(label) == sum(int(v) for v in row[:, 0].tolist()) % 2
    assert len(lengths) > 1  # one length per batch, varying between batches
    xt, yt = task.split("test", 0)
    assert xt.shape == (200, 20, 3)
    assert torch.equal(yt, xt[..., 0].sum(1).long() % 2)
    lead = (xt[..., 0].cumsum(1) == 0).sum(1)  # leading zero bits: padding (and chance zeros)
    assert lead.max() >= 20 - 3 - 1 and (xt[:, -3:, 0].sum() > 0)
    assert 0.4 < yt.float().mean() < 0.6
    xl, yl = task.split_at_length("test", 0, 13, size=10)
    assert xl.shape == (10, 13, 3) and torch.equal(yl, xl[..., 0].sum(1).long() % 2)
    assert TemporalParity().split("test", 0)[0].shape[1] == 60
    with pytest.raises(CodesignError, match="train_min_length"):
        Parity(train_min_length=10, train_max_length=5)


def _check_flip_flop_string(tokens: list[int], length: int, end_with_read: bool) -> None:
    sym = [SYMBOLS[t] for t in tokens]
    assert len(sym) == length
    assert all(s in "wri" for s in sym[0::2]) and all(s in "01" for s in sym[1::2])
    assert sym[0] == "w" and (sym[-2] == "r" or not end_with_read)
    memory = None
    for k in range(0, length, 2):
        if sym[k] == "w":
            memory = sym[k + 1]
        elif sym[k] == "r":
            assert sym[k + 1] == memory


def test_flip_flop_follows_the_definition():
    task = FlipFlop(length=40, val_size=30, test_size=30)
    tokens = task.tokens(50, gen())
    for row in tokens.tolist():
        _check_flip_flop_string(row, 40, True)
    x, y = task.encode(tokens)
    assert torch.equal(x.argmax(-1), tokens) and x.sum(-1).eq(1).all()
    for row, tgt in zip(tokens.tolist(), y.tolist(), strict=True):
        for t, (s, label) in enumerate(zip(row, tgt, strict=True)):
            if SYMBOLS[s] == "r":
                assert label == int(SYMBOLS[row[t + 1]])
            else:
                assert label == IGNORE_INDEX
    assert torch.equal(read_mask(x), y != IGNORE_INDEX)
    # the prediction-set targets of Definition 2
    ps = FlipFlop(length=40, targets="prediction_set")
    _, yp = ps.encode(tokens)
    for row, tgt in zip(tokens.tolist(), yp.tolist(), strict=True):
        for t, (s, label) in enumerate(zip(row, tgt, strict=True)):
            sym = SYMBOLS[s]
            want = 3 if sym in "01" else (1 + int(SYMBOLS[row[t + 1]])) if sym == "r" else 0
            assert label == want
    assert ps.output_size == 4
    # sparse test split: many more ignore instructions than the validation split
    xv, _ = FlipFlop(length=512, val_size=40, test_size=40).split("val", 0)
    xt, yt = FlipFlop(length=512, val_size=40, test_size=40).split("test", 0)
    assert xt[:, 0::2, 2].mean() > 0.95 > 0.85 > xv[:, 0::2, 2].mean()
    for row in xt.argmax(-1).tolist():
        _check_flip_flop_string(row, 512, True)
    # recall-distance probes: w v, i v ... , r v
    xr, yr = task.recall_distance_set(0, distance=25, size=20)
    assert xr.shape == (20, 54, 5) and (yr != IGNORE_INDEX).sum(1).eq(1).all()
    assert torch.equal(yr[:, -2], xr[:, 1].argmax(-1) - 3)


def test_selective_copying_targets_are_the_tokens_in_order():
    task = SelectiveCopying(length=30, num_tokens=5, vocab=7)
    x, y = task.sample(40, gen())
    sym = x.argmax(-1)
    for row, tgt in zip(sym.tolist(), y.tolist(), strict=True):
        content = [s for s in row[:30] if s < 7]
        assert len(content) == 5
        assert row[:30].count(task.blank) == 25 and row[30:] == [task.marker] * 5
        assert tgt[30:] == content and set(tgt[:30]) == {IGNORE_INDEX}


def test_copying_memory_layout_and_targets():
    task = CopyingMemory(delay=12, prefix=4, alphabet=8)
    x, y = task.sample(20, gen())
    sym = x.argmax(-1)
    assert x.shape == (20, 12 + 8, 10)
    assert (sym[:, :4] >= 1).all() and (sym[:, :4] <= 8).all()
    assert (sym[:, 4:15] == 0).all() and (sym[:, 15] == 9).all() and (sym[:, 16:] == 0).all()
    assert torch.equal(y[:, 16:], sym[:, :4]) and (y[:, :16] == IGNORE_INDEX).all()
    _, y_all = CopyingMemory(delay=12, prefix=4, supervise="all").sample(20, gen())
    assert (y_all[:, :16] == 0).all() and torch.equal(y_all[:, 16:], sym[:, :4])
    xn, yn = CopyingMemory(delay=12, prefix=4, delay_noise=True).sample(20, gen())
    sn = xn.argmax(-1)
    assert (sn[:, 4:15] > 0).any() and (sn[:, 15] == 9).all() and torch.equal(yn[:, 16:], sn[:, :4])


def test_delayed_echo_targets_are_the_delayed_input():
    for signal in ("uniform", "gaussian", "binary"):
        x, y = DelayedEcho(length=25, delay=3, channels=2, signal=signal).sample(6, gen())
        assert torch.equal(y[:, 3:], x[:, :-3]) and (y[:, :3] == 0).all()


@pytest.mark.parametrize("frequency,repeat", [(1.0, 1), (0.33, 3), (0.17, 6), (0.07, 14)])
def test_high_frequency_patterns(frequency, repeat):
    task = HighFrequencyPatterns(frequency=frequency)
    assert task.repeat == repeat and task.length == 165
    templates = task.templates()
    assert templates.shape == (16, 32) and len({tuple(t) for t in templates.tolist()}) == 16
    for t in templates.tolist():  # held for `repeat` steps, then a different symbol
        runs = [t[i : i + repeat] for i in range(0, 32, repeat)]
        assert all(len(set(r)) == 1 for r in runs)
        assert all(runs[i][0] != runs[i + 1][0] for i in range(len(runs) - 1))
    x, y = task.sample(10, gen())
    sym = x.argmax(-1)
    for row, tgt in zip(sym.tolist(), y.tolist(), strict=True):
        classes = []
        for k in range(5):
            seg, mark = row[k * 33 : k * 33 + 32], row[k * 33 + 32]
            assert mark == 16 and tgt[k * 33 + 32] == templates.tolist().index(seg)
            classes.append(tgt[k * 33 + 32])
            assert set(tgt[k * 33 : k * 33 + 32]) == {IGNORE_INDEX}
        assert len(set(classes)) == 5  # distinct features in one sequence
