"""Read and write bundles, refusing anything malformed with a one-line error."""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from pydantic import ValidationError

from codesign.atomic import atomic_dir
from codesign.bundle.schema import FORMAT_VERSION, WEIGHT_ARRAYS, Manifest
from codesign.errors import CodesignError
from codesign.intmath import signed_range

MANIFEST = "manifest.yaml"
WEIGHTS = "weights.npz"


@dataclass(frozen=True)
class Bundle:
    """A validated bundle: the manifest and its integer weight arrays (int64)."""

    manifest: Manifest
    weights: dict[str, np.ndarray]
    path: Path | None = None

    @property
    def net(self):
        return self.manifest.network

    def __getitem__(self, name: str) -> np.ndarray:
        return self.weights[name]


def expected_shape(manifest: Manifest, name: str) -> tuple[int, ...]:
    dims = {
        "d": manifest.network.hidden_size,
        "M": manifest.network.input_size,
        "C": manifest.network.num_classes,
    }
    return tuple(dims[k] for k in WEIGHT_ARRAYS[name][0].split(","))


def validation_message(err: ValidationError) -> str:
    """First pydantic error as 'key.path: problem (got value)'."""
    e = err.errors()[0]
    where = ".".join(str(p) for p in e["loc"]) or "<top level>"
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden":
        return f"unknown key '{where}'"
    if e["type"] == "missing":
        return f"missing key '{where}'"
    got = e.get("input")
    shown = "" if isinstance(got, dict) else f" (got {got!r})"
    return f"{where}: {msg}{shown}"


def parse_manifest(data: object, path: Path | None = None) -> Manifest:
    if not isinstance(data, dict):
        raise CodesignError("manifest must be a YAML mapping", path=path)
    version = data.get("format_version")
    if version is not None and version != FORMAT_VERSION:
        raise CodesignError(
            f"bundle format version {version!r} found, this codesign reads version {FORMAT_VERSION}",
            path=path,
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None


def check_weights(
    manifest: Manifest, weights: dict[str, np.ndarray], path: Path | None = None
) -> dict[str, np.ndarray]:
    """Check names, dtypes, shapes and declared widths; return int64 copies."""
    missing = sorted(set(WEIGHT_ARRAYS) - set(weights))
    if missing:
        raise CodesignError(
            f"missing weight array(s) {missing}; a bundle holds {sorted(WEIGHT_ARRAYS)}", path=path
        )
    extra = sorted(set(weights) - set(WEIGHT_ARRAYS))
    if extra:
        raise CodesignError(
            f"unknown weight array(s) {extra}; a bundle holds {sorted(WEIGHT_ARRAYS)}", path=path
        )
    out: dict[str, np.ndarray] = {}
    for name, (_, width_key) in WEIGHT_ARRAYS.items():
        arr = np.asarray(weights[name])
        if arr.dtype.kind not in "iu":
            raise CodesignError(
                f"array '{name}' has dtype {arr.dtype}; bundles hold integers only", path=path
            )
        shape = expected_shape(manifest, name)
        if arr.shape != shape:
            raise CodesignError(
                f"array '{name}' has shape {arr.shape}, the manifest implies {shape}", path=path
            )
        bits = getattr(manifest.formats, width_key).bits
        lo, hi = signed_range(bits)
        arr = arr.astype(np.int64)
        if arr.size and (arr.min() < lo or arr.max() > hi):
            bad = arr[(arr < lo) | (arr > hi)].flat[0]
            raise CodesignError(
                f"array '{name}' holds {bad}, outside its {bits}-bit format [{lo}, {hi}] (formats.{width_key})",
                path=path,
            )
        out[name] = arr
    return out


def _npz_bytes(weights: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v, dtype=np.int64) for k, v in sorted(weights.items())})
    return buf.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_bundle(bundle_dir: str | Path, manifest: Manifest, weights: dict[str, np.ndarray]) -> Bundle:
    """Validate and write a bundle atomically (the directory appears complete or not at all)."""
    weights = check_weights(manifest, weights)
    blob = _npz_bytes(weights)
    manifest = manifest.model_copy(update={"checksums": {WEIGHTS: sha256(blob)}})
    bundle_dir = Path(bundle_dir)
    with atomic_dir(bundle_dir) as tmp:
        (tmp / WEIGHTS).write_bytes(blob)
        (tmp / MANIFEST).write_text(yaml.safe_dump(manifest.model_dump(mode="json"), sort_keys=False))
    return Bundle(manifest, weights, bundle_dir)


def load_bundle(bundle_dir: str | Path) -> Bundle:
    """Load and validate a bundle; every defect is a :class:`CodesignError` naming the file."""
    bundle_dir = Path(bundle_dir)
    if not bundle_dir.is_dir():
        raise CodesignError(
            "bundle directory not found (expected a folder with manifest.yaml and weights.npz)",
            path=bundle_dir,
        )
    mpath, wpath = bundle_dir / MANIFEST, bundle_dir / WEIGHTS
    if not mpath.is_file():
        raise CodesignError("missing manifest.yaml", path=bundle_dir)
    try:
        data = yaml.safe_load(mpath.read_text())
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=mpath) from None
    manifest = parse_manifest(data, mpath)
    if not wpath.is_file():
        raise CodesignError("missing weights.npz", path=bundle_dir)
    blob = wpath.read_bytes()
    want = manifest.checksums.get(WEIGHTS)
    if want is None:
        raise CodesignError(f"checksums.{WEIGHTS} missing from the manifest", path=mpath)
    if sha256(blob) != want:
        raise CodesignError(
            f"checksum mismatch: manifest says {want[:12]}..., file is {sha256(blob)[:12]}...", path=wpath
        )
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            weights = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        raise CodesignError(f"not a readable npz of integer arrays ({err})", path=wpath) from None
    return Bundle(manifest, check_weights(manifest, weights, wpath), bundle_dir)
