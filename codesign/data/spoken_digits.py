"""Spoken digits "zero".."nine": synthesised with espeak-ng, stored like Google Speech Commands,
read as 13 MFCCs x 101 frames (CMRU paper App. G.4, "KWS Digits": 10 words + background noise).

Generation (:func:`generate`, once per machine, into a cache directory)
    Each word is spoken by ``ceil(per_word / repeats)`` synthetic *speakers*, ``repeats`` times
    each (``repeats`` is lowered to ``per_word // 3`` for tiny sets, so that there are at least
    three speakers and the validation and test lists are not empty). A speaker is an espeak-ng
    accent (8 English ones) with a voice variant (40 male, female and character variants), a
    base pitch and a base speed; every clip jitters pitch and speed,
    scales the level, places the word at a random offset in a 1 s, 16 kHz clip, and adds white,
    pink, brown or mains-hum noise at a random SNR (5-35 dB) with probability 0.8. Everything is
    drawn from ``seed`` per clip, so a clip does not depend on which others were made before.
    The layout is Speech Commands': ``<word>/<speaker>_nohash_<k>.wav`` (16-bit PCM),
    ``_background_noise_/*.wav`` (a minute each of white, pink, brown noise and hum),
    ``validation_list.txt`` and ``testing_list.txt`` (whole speakers: 10% each). The set is built
    in a hidden staging directory beside ``out_dir`` and renamed into place when complete; an
    interrupted run resumes there (clips are written atomically, finished ones are kept).

Loading (:class:`SpeechCommandsDigits`)
    Reads that layout, whether generated here or the real Speech Commands folder (v0.01 or
    v0.02): training = clips of the chosen words listed in neither list. Each clip is padded or
    cut to 16000 samples; librosa MFCCs (13 coefficients, 40 mel bands, 30 ms Hann windows,
    10 ms hop, centred: 101 frames). The background class cuts 1 s windows from the
    ``_background_noise_`` files, each file split in time 80/10/10 into train/val/test regions
    so that no window crosses splits, scaled by a random gain in [0.1, 1]; by default each split
    gets as many background windows as it has clips per word on average (balanced classes).
    Features are cached as ``.npz`` (no pickle) keyed by the file list and the parameters.
    Inputs ``(batch, 101, 13)``, standardised per coefficient with training statistics; labels
    ``(batch,)`` (read at the last step; the paper uses mean pooling).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from codesign.data._util import FixedSplits, check
from codesign.errors import CodesignError

DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
BACKGROUND = "_background_noise_"
SAMPLE_RATE = 16000
CLIP = SAMPLE_RATE  # one second
MANIFEST = "codesign_spoken_digits.json"
FORMAT_VERSION = 1

ACCENTS = (
    "en",
    "en-us",
    "en-gb-scotland",
    "en-gb-x-gbclan",
    "en-gb-x-rp",
    "en-gb-x-gbcwmd",
    "en-029",
    "en-us-nyc",
)
VARIANTS = (
    "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "f1", "f2", "f3", "f4", "f5",
    "klatt", "klatt2", "klatt3", "klatt4", "Alex", "Andy", "annie", "anika", "aunty", "belinda",
    "benjamin", "boris", "caleb", "david", "edward", "iven", "john", "linda", "max", "michel",
    "norbert", "paul", "quincy", "robert", "steph", "travis", "whisper",
)  # fmt: skip
NOISES = ("white", "pink", "brown", "hum")

# MFCC front end (CMRU paper: 13 MFCCs x 101 steps from 1 s at 16 kHz, librosa)
N_MFCC = 13
FRAMES = 101
MFCC_PARAMS = {
    "sr": SAMPLE_RATE,
    "n_mfcc": N_MFCC,
    "n_fft": 512,
    "win_length": 480,
    "hop_length": 160,
    "n_mels": 40,
}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give: mkstemp's files are 0600


def cache_home() -> Path:
    """``$CODESIGN_CACHE`` or ``~/.cache/codesign``."""
    env = os.environ.get("CODESIGN_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "codesign"


def default_root(per_word: int = 300, seed: int = 0) -> Path:
    """Where :class:`SpeechCommandsDigits` keeps a generated set with these parameters."""
    return cache_home() / "spoken_digits" / f"per{per_word}-seed{seed}"


# ---------------------------------------------------------------- wav I/O


def read_wav(path: str | Path) -> np.ndarray:
    """A mono 16-bit PCM wav as float32 in [-1, 1], resampled to 16 kHz if needed."""
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
            frames = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as err:
        raise CodesignError(f"not a PCM wav file ({err})", path=path) from None
    if width != 2:
        raise CodesignError(f"expected 16-bit PCM, got {8 * width}-bit samples", path=path)
    y = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        y = y.reshape(-1, channels).mean(axis=1)
    if rate != SAMPLE_RATE:
        from scipy.signal import resample_poly

        g = math.gcd(rate, SAMPLE_RATE)
        y = resample_poly(y, SAMPLE_RATE // g, rate // g).astype(np.float32)
    return y


def _write_wav(path: Path, y: np.ndarray) -> None:
    """Write float samples as 16 kHz 16-bit PCM, atomically (temporary file, then rename)."""
    pcm = (np.clip(y, -1.0, 32767 / 32768) * 32768.0).round().astype("<i2")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, _FILE_MODE)
    try:
        with wave.open(tmp, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(SAMPLE_RATE)
            w.writeframes(pcm.tobytes())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.chmod(tmp, _FILE_MODE)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


# ---------------------------------------------------------------- synthesis


def espeak_binary() -> str:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise CodesignError("spoken-digit generation needs espeak-ng: apt-get install espeak-ng")
    return exe


def espeak_version() -> str:
    out = subprocess.run([espeak_binary(), "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().split("  ")[0]


def noise(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS noise of ``n`` samples: ``white``, ``pink`` (1/f), ``brown`` (1/f^2) or ``hum``."""
    if kind == "hum":
        t = np.arange(n) / SAMPLE_RATE
        f0 = rng.choice([50.0, 60.0])
        y = sum(
            rng.uniform(0.2, 1.0) / k * np.sin(2 * np.pi * k * f0 * t + rng.uniform(0, 2 * np.pi))
            for k in range(1, 8)
        )
        y = y + 0.1 * noise("pink", n, rng)
    else:
        spec = np.fft.rfft(rng.standard_normal(n))
        f = np.arange(len(spec), dtype=np.float64)
        f[0] = 1.0
        spec = spec / {"white": 1.0, "pink": np.sqrt(f), "brown": f}[kind]
        spec[0] = 0.0
        y = np.fft.irfft(spec, n)
    return (y / max(np.sqrt(np.mean(y**2)), 1e-12)).astype(np.float32)


def _synthesise(text: str, voice: str, speed: int, pitch: int) -> np.ndarray:
    """espeak-ng speech for ``text`` at 16 kHz, leading and trailing silence trimmed."""
    with tempfile.TemporaryDirectory(prefix="codesign-espeak-") as tmp:
        out = Path(tmp) / "s.wav"
        cmd = [espeak_binary(), "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(out), text]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0 or not out.exists():
            raise CodesignError(f"espeak-ng failed for voice {voice!r}: {res.stderr.strip()}")
        y = read_wav(out)
    loud = np.flatnonzero(np.abs(y) > 0.02 * max(np.abs(y).max(), 1e-9))
    if len(loud) == 0:
        raise CodesignError(f"espeak-ng produced silence for {text!r} with voice {voice!r}")
    return y[loud[0] : loud[-1] + 1]


def _speaker(seed: int, k: int) -> dict:
    rng = np.random.default_rng([seed, 1, k])
    return {
        "id": hashlib.sha1(f"codesign-spoken-digits:{seed}:{k}".encode()).hexdigest()[:8],
        "voice": f"{ACCENTS[rng.integers(len(ACCENTS))]}+{VARIANTS[rng.integers(len(VARIANTS))]}",
        "pitch": int(rng.integers(20, 81)),
        "speed": int(rng.integers(125, 211)),
    }


def _make_clip(seed: int, word_index: int, word: str, speaker: dict, k: int, rep: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 2, k, word_index, rep])
    pitch = int(np.clip(speaker["pitch"] + rng.integers(-8, 9), 0, 99))
    speed = int(np.clip(round(speaker["speed"] * rng.uniform(0.88, 1.12)), 80, 400))
    speech = _synthesise(word, speaker["voice"], speed, pitch)[:CLIP]
    speech = speech / max(np.abs(speech).max(), 1e-9) * rng.uniform(0.15, 0.9)
    clip = np.zeros(CLIP, dtype=np.float32)
    offset = int(rng.integers(0, CLIP - len(speech) + 1))
    clip[offset : offset + len(speech)] = speech
    if rng.random() < 0.8:
        snr_db = rng.uniform(5.0, 35.0)
        rms = np.sqrt(np.mean(speech**2))
        clip += noise(NOISES[rng.integers(len(NOISES))], CLIP, rng) * rms / 10 ** (snr_db / 20)
    else:
        clip += rng.standard_normal(CLIP).astype(np.float32) * 1e-4  # dither
    peak = np.abs(clip).max()
    return clip / peak * 0.99 if peak > 0.99 else clip


def generate(
    out_dir: str | Path,
    per_word: int = 300,
    seed: int = 0,
    *,
    words: tuple[str, ...] = DIGITS,
    repeats: int = 5,
    background_seconds: int = 60,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Synthesise the spoken-digit set into ``out_dir`` (Speech Commands layout); return it.

    Idempotent and resumable: a complete set with the same parameters is returned as is; a run
    that was interrupted continues in ``.<name>.partial`` beside ``out_dir``; ``out_dir`` only
    appears once complete. A different set already at ``out_dir`` is an error.
    ``progress(done, total)`` is called as clips are finished.
    """
    out_dir = Path(out_dir).expanduser()
    if per_word < 1 or repeats < 1 or background_seconds < 10 or workers < 1:
        raise CodesignError(
            "generate needs per_word >= 1, repeats >= 1, background_seconds >= 10, workers >= 1"
        )
    repeats = max(1, min(repeats, per_word // 3))  # at least 3 speakers: val and test get one each
    params = {
        "format": FORMAT_VERSION,
        "per_word": per_word,
        "seed": seed,
        "words": list(words),
        "repeats": repeats,
        "background_seconds": background_seconds,
    }
    espeak = espeak_version()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / f".{out_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one generator per directory (two trainers may start at once)
        return _generate_locked(out_dir, params, espeak, progress, workers)


def _generate_locked(out_dir: Path, params: dict, espeak: str, progress, workers: int) -> Path:
    seed, per_word, repeats, words = params["seed"], params["per_word"], params["repeats"], params["words"]
    background_seconds = params["background_seconds"]
    manifest = out_dir / MANIFEST
    if out_dir.exists():
        if manifest.exists():
            have = json.loads(manifest.read_text())
            if have.get("complete") and have.get("params") == params:
                return out_dir
            raise CodesignError(
                f"holds a different spoken-digit set ({have.get('params')}); remove it or pick another directory",
                path=out_dir,
            )
        if any(out_dir.iterdir()):
            raise CodesignError(
                "exists and is not a generated spoken-digit set; pick an empty or new directory", path=out_dir
            )

    stage = out_dir.parent / f".{out_dir.name}.partial"
    stage_manifest = stage / MANIFEST
    if stage.exists():
        try:
            same = json.loads(stage_manifest.read_text()).get("params") == params
        except (OSError, ValueError):
            same = False
        if not same:
            shutil.rmtree(stage)
    stage.mkdir(parents=True, exist_ok=True)
    for leftover in stage.glob("**/.*.tmp"):  # half-written files of an interrupted run
        leftover.unlink()
    _write_text(
        stage_manifest, json.dumps({"params": params, "espeak_ng": espeak, "complete": False}, indent=1)
    )

    n_speakers = math.ceil(per_word / repeats)
    speakers = [_speaker(seed, k) for k in range(n_speakers)]
    jobs = []
    for wi, word in enumerate(words):
        (stage / word).mkdir(exist_ok=True)
        for i in range(per_word):
            k, rep = divmod(i, repeats)
            path = stage / word / f"{speakers[k]['id']}_nohash_{rep}.wav"
            jobs.append((path, wi, word, k, rep))
    todo = [j for j in jobs if not j[0].exists()]
    done = len(jobs) - len(todo)
    if progress:
        progress(done, len(jobs))

    def run(job):
        path, wi, word, k, rep = job
        _write_wav(path, _make_clip(seed, wi, word, speakers[k], k, rep))

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for _ in pool.map(run, todo):
            done += 1
            if progress:
                progress(done, len(jobs))
    finally:  # on an interruption, drop the clips not started yet
        pool.shutdown(wait=True, cancel_futures=True)

    bg = stage / BACKGROUND
    bg.mkdir(exist_ok=True)
    for j, kind in enumerate(NOISES):
        path = bg / f"{kind}_noise.wav"
        if not path.exists():
            rng = np.random.default_rng([seed, 3, j])
            _write_wav(path, 0.3 * noise(kind, background_seconds * SAMPLE_RATE, rng) / 4)

    order = np.random.default_rng([seed, 4]).permutation(n_speakers)
    n_held = max(1, round(0.1 * n_speakers)) if n_speakers >= 3 else 0
    part = {int(k): "train" for k in order}
    for k in order[:n_held]:
        part[int(k)] = "val"
    for k in order[n_held : 2 * n_held]:
        part[int(k)] = "test"
    lists = {"val": [], "test": []}
    for path, _, word, k, _ in jobs:
        if part[k] in lists:
            lists[part[k]].append(f"{word}/{path.name}")
    _write_text(stage / "validation_list.txt", "".join(f"{p}\n" for p in sorted(lists["val"])))
    _write_text(stage / "testing_list.txt", "".join(f"{p}\n" for p in sorted(lists["test"])))
    _write_text(stage / "README.txt", _README.format(**params, espeak_ng=espeak, speakers=n_speakers))
    _write_text(
        stage_manifest,
        json.dumps({"params": params, "espeak_ng": espeak, "complete": True, "speakers": speakers}, indent=1),
    )
    if out_dir.exists():
        out_dir.rmdir()  # empty (checked above)
    os.replace(stage, out_dir)
    return out_dir


_README = """Synthetic spoken digits in the Google Speech Commands layout, made by codesign
(codesign.data.spoken_digits.generate) with espeak-ng {espeak_ng}.
per_word={per_word} seed={seed} repeats={repeats} speakers={speakers}
Speakers are synthetic (accent + voice variant + pitch + speed); validation_list.txt and
testing_list.txt hold whole speakers. _background_noise_ holds {background_seconds} s each of white,
pink, brown noise and mains hum.
"""


# ---------------------------------------------------------------- features


def mfcc(clip: np.ndarray) -> np.ndarray:
    """13 MFCCs x 101 frames ``(101, 13)`` of a 1 s, 16 kHz clip (padded or cut to 16000)."""
    return mfcc_batch([clip])[0]


def mfcc_batch(clips: list[np.ndarray]) -> np.ndarray:
    """MFCCs ``(n, 101, 13)`` of several clips in one librosa call (each padded or cut to 1 s)."""
    from codesign.extras import require

    require("librosa", "the spoken-digit features")
    import librosa

    y = np.zeros((len(clips), CLIP), dtype=np.float32)
    for i, c in enumerate(clips):
        y[i, : min(CLIP, len(c))] = c[:CLIP]
    return np.ascontiguousarray(librosa.feature.mfcc(y=y, **MFCC_PARAMS).transpose(0, 2, 1), dtype=np.float32)


def warm_up() -> float:
    """Run one MFCC so that numba compiles librosa's kernels into its on-disk cache.

    The first call on a machine takes about 45 s, later processes about 6 s. Returns seconds.
    """
    import time

    t = time.perf_counter()
    mfcc(np.zeros(CLIP, dtype=np.float32))
    return time.perf_counter() - t


def _listing(root: Path, words: tuple[str, ...]) -> dict[str, list[str]]:
    """Relative paths of each split (Speech Commands rules), and the background files."""

    def read_list(name: str) -> set[str]:
        p = root / name
        return set(p.read_text().split()) if p.exists() else set()

    val, test = read_list("validation_list.txt"), read_list("testing_list.txt")
    out: dict[str, list[str]] = {"train": [], "val": [], "test": [], "background": []}
    for word in words:
        d = root / word
        if not d.is_dir():
            raise CodesignError(f"no folder for the word {word!r}: not a Speech Commands layout", path=root)
        for f in sorted(os.listdir(d)):
            if f.endswith(".wav") and not f.startswith("."):
                rel = f"{word}/{f}"
                out["val" if rel in val else "test" if rel in test else "train"].append(rel)
    bg = root / BACKGROUND
    if bg.is_dir():
        out["background"] = [
            f"{BACKGROUND}/{f}"
            for f in sorted(os.listdir(bg))
            if f.endswith(".wav") and not f.startswith(".")
        ]
    return out


@dataclass(frozen=True)
class SpeechCommandsDigits(FixedSplits):
    kind = "classification"
    target = "last"

    root: str | None = None
    words: tuple[str, ...] = DIGITS
    background: bool = True
    background_per_split: int | None = None
    normalize: bool = True
    split_seed: int = 0
    per_word: int = 300
    seed: int = 0
    generate_missing: bool = True
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        n = "spoken_digits"
        check(
            len(self.words) >= 1 and len(set(self.words)) == len(self.words),
            n,
            "words must be distinct and non-empty",
        )
        check(self.per_word >= 1, n, f"per_word must be >= 1, got {self.per_word}")
        check(
            self.background_per_split is None or self.background_per_split >= 0,
            n,
            "background_per_split must be >= 0",
        )

    @property
    def classes(self) -> list[str]:
        return [*self.words, BACKGROUND] if self.background else list(self.words)

    @property
    def input_size(self) -> int:
        return N_MFCC

    @property
    def output_size(self) -> int:
        return len(self.classes)

    @property
    def length(self) -> int:
        return FRAMES

    def dataset_root(self) -> Path:
        """The folder read: ``root``, or the generated set for ``per_word`` and ``seed``."""
        if self.root is not None:
            root = Path(self.root).expanduser()
            if not root.is_dir():
                raise CodesignError("Speech Commands folder not found", path=root)
            return root
        root = default_root(self.per_word, self.seed)
        if not (root / MANIFEST).exists():
            if not self.generate_missing:
                raise CodesignError(
                    "spoken-digit set not generated yet (codesign.data.spoken_digits.generate)", path=root
                )
            print(f"generating spoken digits into {root} (once)", file=sys.stderr)
            generate(root, per_word=self.per_word, seed=self.seed)
        return root

    def _features(self) -> dict[str, np.ndarray]:
        key = ("features", self)
        if key in _CACHE:
            return _CACHE[key]
        root = self.dataset_root()
        listing = _listing(root, self.words)
        if self.background and not listing["background"]:
            raise CodesignError(f"no {BACKGROUND} folder with wav files; set background: false", path=root)
        stamp = hashlib.sha256()
        stamp.update(
            json.dumps(
                [
                    FORMAT_VERSION,
                    MFCC_PARAMS,
                    self.words,
                    self.background,
                    self.background_per_split,
                    self.split_seed,
                ]
            ).encode()
        )
        for split in ("train", "val", "test", "background"):
            for rel in listing[split]:
                st = (root / rel).stat()
                stamp.update(f"{split}:{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        digest = stamp.hexdigest()[:20]
        cache = self._cache_file(root, digest)
        if cache.exists():
            with np.load(cache, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        else:
            data = self._compute(root, listing)
            cache.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{cache.name}.", suffix=".tmp", dir=cache.parent)
            os.close(fd)
            try:
                with open(tmp, "wb") as fh:
                    np.savez(fh, **data)
                os.replace(tmp, cache)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        _CACHE[key] = data
        return data

    def _cache_file(self, root: Path, digest: str) -> Path:
        if self.cache_dir is not None:
            base = Path(self.cache_dir).expanduser()
        elif os.access(root, os.W_OK):
            base = root / ".codesign_features"
        else:
            base = cache_home() / "features"
        return base / f"mfcc-{digest}.npz"

    def _compute(self, root: Path, listing: dict[str, list[str]]) -> dict[str, np.ndarray]:
        feats, labels, parts = [], [], []
        index = {w: i for i, w in enumerate(self.words)}
        files = []
        for p, split in enumerate(("train", "val", "test")):
            for rel in listing[split]:
                files.append(rel)
                labels.append(index[rel.split("/", 1)[0]])
                parts.append(p)
        for i in range(0, len(files), 256):
            feats.extend(mfcc_batch([read_wav(root / rel) for rel in files[i : i + 256]]))
        if self.background:
            counts = np.bincount(parts, minlength=3)
            wanted = [
                self.background_per_split
                if self.background_per_split is not None
                else int(round(c / len(self.words)))
                for c in counts
            ]
            noises = [read_wav(root / rel) for rel in listing["background"]]
            rng = np.random.default_rng([self.split_seed, 5])
            bounds = ((0.0, 0.8), (0.8, 0.9), (0.9, 1.0))
            for p, (lo, hi) in enumerate(bounds):
                usable = [
                    (j, int(lo * len(y)), int(hi * len(y)))
                    for j, y in enumerate(noises)
                    if int(hi * len(y)) - int(lo * len(y)) >= CLIP
                ]
                if not usable and wanted[p] > 0:
                    raise CodesignError(
                        "background files too short to cut 1 s windows for every split",
                        path=root / BACKGROUND,
                    )
                windows = []
                for _ in range(wanted[p]):
                    j, a, b = usable[rng.integers(len(usable))]
                    start = int(rng.integers(a, b - CLIP + 1))
                    windows.append(noises[j][start : start + CLIP] * rng.uniform(0.1, 1.0))
                for i in range(0, len(windows), 256):
                    feats.extend(mfcc_batch(windows[i : i + 256]))
                labels.extend([len(self.words)] * len(windows))
                parts.extend([p] * len(windows))
        return {
            "x": np.stack(feats).astype(np.float32) if feats else np.zeros((0, FRAMES, N_MFCC), np.float32),
            "y": np.asarray(labels, dtype=np.int64),
            "part": np.asarray(parts, dtype=np.int8),
        }

    def _sets(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        key = ("sets", self)
        if key not in _CACHE:
            d = self._features()
            x, y, part = d["x"], d["y"], d["part"]
            if not (part == 0).any():
                raise CodesignError("the training split is empty", path=self.dataset_root())
            if self.normalize:
                train = x[part == 0].reshape(-1, N_MFCC)
                mean, std = train.mean(axis=0), train.std(axis=0)
                x = (x - mean) / np.where(std > 0, std, 1.0)
            xt, yt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), torch.from_numpy(y)
            _CACHE[key] = {
                name: (xt[torch.from_numpy(part == i)], yt[torch.from_numpy(part == i)])
                for i, name in enumerate(("train", "val", "test"))
            }
        return _CACHE[key]

    def _split_arrays(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        return self._sets()[name]


_CACHE: dict[object, object] = {}
