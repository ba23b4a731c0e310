"""Small-data training: augmentation transforms, weight-averaged selection, training without validation."""

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.data import CopyFirstDiscrete
from codesign.errors import CodesignError
from codesign.train import train
from codesign.train.augment import _resample, _sliced_positions, _warped_positions, augment_batch
from codesign.train.recipe import AugmentSpec, parse_recipe
from codesign.train.trainer import BEST, LAST, load_checkpoint, make_recipe_task

FILES = Path(__file__).parent / "data" / "files"
RECIPE = {
    "name": "tiny",
    "seed": 0,
    "task": {"name": "copy_first", "classes": 4, "length": 12, "val_size": 64, "test_size": 64},
    "model": {"cell": "cmru", "hidden_size": 6, "eps": 1.0},
    "train": {
        "iterations": 40,
        "batch_size": 16,
        "eval_every": 10,
        "eval_batches": 2,
        "early_stop_evals": 50,
    },
}
EVERYTHING = AugmentSpec(scaling=0.2, magnitude_warp=0.2, time_warp=0.3, window_slice=0.8)


def padded_batch(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Eight series of 30 frames, 3 channels, the first ``pad`` frames silent (front padding)."""
    x = torch.randn(8, 30, 3, generator=gen)
    for i, pad in enumerate([0, 3, 5, 10, 0, 1, 2, 29]):
        x[i, :pad] = 0
    return x, torch.arange(8) % 2


def test_off_by_default_and_identity_when_off() -> None:
    spec = parse_recipe(RECIPE).train.augment
    assert not spec.active
    x, y = padded_batch(torch.Generator().manual_seed(0))
    assert augment_batch(x, y, spec, torch.Generator()) is x


def test_magnitude_transforms_leave_padding_silent_and_change_the_rest() -> None:
    x, y = padded_batch(torch.Generator().manual_seed(1))
    spec = AugmentSpec(scaling=0.3, magnitude_warp=0.3)
    out = augment_batch(x, y, spec, torch.Generator().manual_seed(2))
    silent = ~(x != 0).any(-1)
    assert (out[silent] == 0).all()
    assert not torch.allclose(out[~silent], x[~silent])
    assert torch.equal(torch.sign(out[~silent]) != 0, x[~silent] != 0)  # gains stay near 1 here


def test_the_same_generator_gives_the_same_batch() -> None:
    x, y = padded_batch(torch.Generator().manual_seed(3))
    a = augment_batch(x, y, EVERYTHING, torch.Generator().manual_seed(4))
    b = augment_batch(x, y, EVERYTHING, torch.Generator().manual_seed(4))
    c = augment_batch(x, y, EVERYTHING, torch.Generator().manual_seed(5))
    assert a.shape == x.shape and torch.equal(a, b) and not torch.equal(a, c)


@settings(max_examples=30, deadline=None)
@given(
    length=st.integers(2, 200),
    std=st.floats(0.0, 2.0),
    keep=st.floats(0.05, 1.0),
    seed=st.integers(0, 2**16),
)
def test_time_axes_are_monotone_and_stay_inside_the_series(
    length: int, std: float, keep: float, seed: int
) -> None:
    gen = torch.Generator().manual_seed(seed)
    warped = _warped_positions(4, length, 4, std, gen)
    assert torch.allclose(warped[:, 0], torch.zeros(4), atol=1e-4)
    assert torch.allclose(warped[:, -1], torch.full((4,), length - 1.0), atol=1e-3)
    assert (warped.diff(dim=1) >= 0).all()
    sliced = _sliced_positions(4, length, keep, gen)
    assert (sliced >= -1e-4).all() and (sliced <= length - 1 + 1e-3).all()
    assert torch.allclose(sliced[:, -1] - sliced[:, 0], torch.full((4,), keep * (length - 1)), atol=1e-3)


def test_resampling_reads_the_frames_at_integer_positions_and_interpolates_between() -> None:
    x = torch.arange(10.0).reshape(1, 10, 1).repeat(1, 1, 2)
    at = torch.tensor([[0.0, 2.0, 2.5, 9.0, 12.0]])  # beyond the end clamps to the last frame
    assert _resample(x, at)[0, :, 0].tolist() == [0.0, 2.0, 2.5, 9.0, 9.0]


def test_a_share_of_every_batch_trains_as_it_is() -> None:
    """Transforming every series taught ACSF1 only stretched, resampled series (13 % on the raw ones)."""
    x = torch.randn(400, 30, 2, generator=torch.Generator().manual_seed(7)) + 3.0  # no silent frame
    y = torch.zeros(400, dtype=torch.long)
    out = augment_batch(x, y, EVERYTHING, torch.Generator().manual_seed(8))
    raw = (out == x).all(dim=(1, 2))
    assert EVERYTHING.probability == 0.5 and 150 < int(raw.sum()) < 250
    assert not torch.isclose(out[~raw], x[~raw]).all(dim=(1, 2)).any()  # the others all transformed
    every = EVERYTHING.model_copy(update={"probability": 1.0})
    assert not (augment_batch(x, y, every, torch.Generator().manual_seed(8)) == x).all(dim=(1, 2)).any()
    never = EVERYTHING.model_copy(update={"probability": 0.0})
    assert not never.active and augment_batch(x, y, never, torch.Generator()) is x


def test_time_transforms_refuse_per_step_labels() -> None:
    x, _ = padded_batch(torch.Generator().manual_seed(6))
    with pytest.raises(CodesignError, match="one label per series"):
        augment_batch(x, torch.zeros(8, 30, dtype=torch.long), EVERYTHING, torch.Generator())


def test_a_recipe_with_augmentation_trains(tmp_path: Path) -> None:
    data = dict(RECIPE, train=dict(RECIPE["train"], augment={"scaling": 0.1, "magnitude_warp": 0.1}))
    result = train(parse_recipe(data), tmp_path / "run", progress=False)
    assert result.iterations == 40 and 0.0 <= result.test <= 1.0


def test_average_selection_keeps_the_mean_of_the_last_evaluations(tmp_path: Path, monkeypatch) -> None:
    """``average_last: 0.25`` of 40 iterations averages the evaluations at 30 and 40, across a resume."""
    recipe = parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], selection="average", average_last=0.25)))
    real_sample = CopyFirstDiscrete.sample
    calls = {"n": 0}

    def interrupted(self, n, generator):
        if n == 16:
            calls["n"] += 1
            if calls["n"] == 31:  # after the evaluation at 30
                raise KeyboardInterrupt
        return real_sample(self, n, generator)

    monkeypatch.setattr(CopyFirstDiscrete, "sample", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, tmp_path / "run", progress=False)
    at_30 = load_checkpoint(tmp_path / "run" / LAST)
    assert at_30["iteration"] == 30 and at_30["averaged"] == 1
    monkeypatch.setattr(CopyFirstDiscrete, "sample", real_sample)
    result = train(recipe, tmp_path / "run", progress=False)
    at_40 = load_checkpoint(tmp_path / "run" / LAST)["model"]
    best = load_checkpoint(tmp_path / "run" / BEST)
    assert best["averaged"] == 2 and best["iteration"] == 40 and result.best_iteration == 40
    for key, value in best["model"].items():
        assert torch.allclose(value, (at_30["model"][key] + at_40[key]) / 2, atol=1e-7), key
    # an uninterrupted run keeps the same mean
    train(recipe, tmp_path / "straight", progress=False)
    straight = load_checkpoint(tmp_path / "straight" / BEST)["model"]
    assert all(torch.equal(straight[k], best["model"][k]) for k in straight)


def files_recipe(**train_options) -> dict:
    task = {
        "name": "files",
        "train": str(FILES / "tiny_TRAIN.ts"),
        "test": str(FILES / "tiny_TEST.ts"),
        "val_fraction": 0.0,
    }
    train_spec = {"iterations": 20, "batch_size": 8, "eval_every": 10, "eval_batches": 1, **train_options}
    return {"name": "files", "task": task, "model": {"cell": "cmru", "hidden_size": 4}, "train": train_spec}


def test_val_fraction_zero_trains_on_the_whole_file_with_average_selection(tmp_path: Path) -> None:
    recipe = parse_recipe(files_recipe(selection="average"))
    task = make_recipe_task(recipe)
    x_val, _ = task.split("val", 0)
    assert len(x_val) == 0
    result = train(recipe, tmp_path / "run", progress=False)
    assert result.best_val is None and 0.0 <= result.test <= 1.0


def test_val_fraction_zero_with_a_selection_that_needs_validation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CodesignError, match="no validation set"):
        train(parse_recipe(files_recipe(selection="smoothed")), tmp_path / "run", progress=False)
