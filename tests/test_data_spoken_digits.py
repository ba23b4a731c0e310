"""Spoken digits: espeak-ng synthesis in the Speech Commands layout, resumable generation, MFCCs.

espeak-ng is a required Debian package of the project (scripts/bootstrap.sh installs it).
"""

from __future__ import annotations

import json
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest
import torch

from codesign.data import spoken_digits as sd
from codesign.data.base import Task
from codesign.errors import CodesignError

WORDS = ("zero", "one", "two")
SMALL = {"per_word": 3, "seed": 5, "words": WORDS, "background_seconds": 10}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    assert shutil.which("espeak-ng"), (
        "espeak-ng is missing: apt-get install espeak-ng (scripts/bootstrap.sh does)"
    )
    return sd.generate(tmp_path_factory.mktemp("sd") / "digits", **SMALL)


def wav_info(path: Path) -> tuple[int, int, int, int]:
    with wave.open(str(path)) as w:
        return w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()


def test_generated_layout_is_speech_commands(dataset):
    manifest = json.loads((dataset / sd.MANIFEST).read_text())
    assert manifest["complete"] and manifest["params"]["per_word"] == 3
    for word in WORDS:
        clips = sorted((dataset / word).glob("*.wav"))
        assert len(clips) == 3 and all("_nohash_" in c.name for c in clips)
        assert all(wav_info(c) == (16000, 2, 1, 16000) for c in clips)
    noises = sorted((dataset / sd.BACKGROUND).glob("*.wav"))
    assert [n.name for n in noises] == sorted(f"{k}_noise.wav" for k in sd.NOISES)
    assert wav_info(noises[0])[3] == 10 * 16000
    val = (dataset / "validation_list.txt").read_text().split()
    test = (dataset / "testing_list.txt").read_text().split()
    assert val and test and not set(val) & set(test)
    assert all((dataset / p).exists() for p in val + test)
    speaker = {p.split("/")[1].split("_nohash_")[0] for p in val}  # whole speakers per split
    assert not speaker & {p.split("/")[1].split("_nohash_")[0] for p in test}
    clip = sd.read_wav(dataset / val[0])
    assert clip.shape == (16000,) and 0.05 < np.abs(clip).max() <= 1.0
    assert not list(dataset.parent.glob(".*.partial"))  # staging directory renamed away


def test_generation_is_idempotent_deterministic_and_resumable(dataset, tmp_path):
    before = {p: p.stat().st_mtime_ns for p in dataset.rglob("*.wav")}
    assert sd.generate(dataset, **SMALL) == dataset  # complete: nothing redone
    assert {p: p.stat().st_mtime_ns for p in dataset.rglob("*.wav")} == before
    with pytest.raises(CodesignError, match="different spoken-digit set"):
        sd.generate(dataset, **{**SMALL, "seed": 6})

    class Stop(Exception):
        pass

    def stop_after_four(done, total):
        if done >= 4:
            raise Stop

    out = tmp_path / "again"
    with pytest.raises(Stop):
        sd.generate(out, **SMALL, progress=stop_after_four)
    assert not out.exists() and (tmp_path / ".again.partial").is_dir()  # interrupted: staged only
    counts = []
    sd.generate(out, **SMALL, progress=lambda done, total: counts.append(done))
    assert 4 <= counts[0] < 9 and counts[-1] == 9  # resumed: kept the finished clips, made the rest
    for p in dataset.rglob("*.wav"):  # same seed, same bytes
        assert (out / p.relative_to(dataset)).read_bytes() == p.read_bytes()
    assert (out / "validation_list.txt").read_text() == (dataset / "validation_list.txt").read_text()


def test_loader_mfcc_features_and_cache(dataset, tmp_path):
    task = sd.SpeechCommandsDigits(root=str(dataset), words=WORDS, cache_dir=str(tmp_path / "feat"))
    assert isinstance(task, Task)
    assert task.classes == [*WORDS, sd.BACKGROUND] and task.input_size == 13 and task.output_size == 4
    x, y = task.split("train", 0)
    xv, yv = task.split("val", 0)
    xt, yt = task.split("test", 0)
    assert x.shape[1:] == (101, 13) and x.dtype == torch.float32 and y.dtype == torch.int64
    assert len(x) + len(xv) + len(xt) == 9 + 3  # 3 clips per word, 1 background window per split
    assert set(y.tolist()) == {0, 1, 2, 3} and 3 in yv.tolist() and 3 in yt.tolist()
    assert torch.isfinite(x).all() and x.reshape(-1, 13).mean(0).abs().max() < 1e-3
    cache = list((tmp_path / "feat").glob("mfcc-*.npz"))
    assert len(cache) == 1
    with np.load(cache[0], allow_pickle=False) as z:
        assert z["x"].shape == (len(x) + len(xv) + len(xt), 101, 13)
    sd._CACHE.clear()  # a new process would read the npz
    again = sd.SpeechCommandsDigits(root=str(dataset), words=WORDS, cache_dir=str(tmp_path / "feat"))
    assert torch.equal(again.split("test", 0)[0], xt)
    xs, ys = task.sample(6, torch.Generator().manual_seed(0))
    assert xs.shape == (6, 101, 13) and ys.max() < 4


def test_loader_reads_a_real_speech_commands_folder(dataset, tmp_path):
    # The real dataset: more word folders than the digits, lists naming some clips, no manifest.
    real = tmp_path / "speech_commands_v0.02"
    for word in (*WORDS, "yes"):
        shutil.copytree(dataset / ("zero" if word == "yes" else word), real / word)
    shutil.copytree(dataset / sd.BACKGROUND, real / sd.BACKGROUND)
    shutil.copy(dataset / "validation_list.txt", real)
    shutil.copy(dataset / "testing_list.txt", real)
    task = sd.SpeechCommandsDigits(
        root=str(real), words=WORDS, background=False, cache_dir=str(tmp_path / "f")
    )
    x, y = task.split("train", 0)
    assert task.output_size == 3 and set(y.tolist()) <= {0, 1, 2} and x.shape[1:] == (101, 13)
    with pytest.raises(CodesignError, match="no folder for the word 'four'"):
        sd.SpeechCommandsDigits(root=str(real), words=("four",), cache_dir=str(tmp_path / "f")).split(
            "train", 0
        )
    with pytest.raises(CodesignError, match="not found"):
        sd.SpeechCommandsDigits(root=str(tmp_path / "missing")).split("train", 0)
