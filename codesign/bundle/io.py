"""Read and write bundles, refusing anything malformed with a one-line error.

Version 2 is written; version 1 bundles (the spine's single-layer format) are read and converted
in memory, so old bundles keep working. Any other version is refused naming the version found and
the versions this codesign reads.
"""

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
from codesign.bundle.features import FeatureManifest, array_range
from codesign.bundle.host import check_host
from codesign.bundle.spec import (
    FORMAT_VERSION,
    READABLE_VERSIONS,
    Manifest,
    accumulator_bits,
    array_table,
    shift_bounds,
)
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

    def layer_weights(self, index: int) -> dict[str, np.ndarray]:
        prefix = f"layers.{index}."
        return {k[len(prefix) :]: v for k, v in self.weights.items() if k.startswith(prefix)}


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
    shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
    return f"{where}: {msg}{shown}"


V1_ARRAYS = {
    "w_cand": "layers.0.w_cand",
    "b_cand": "layers.0.b_cand",
    "w_thr": "layers.0.w_thr",
    "b_thr": "layers.0.b_thr",
    "alpha": "layers.0.alpha",
    "w_out": "readout.weight",
    "b_out": "readout.bias",
}


def upgrade_v1(data: dict) -> dict:
    """A version-1 manifest (one CMRU/BMRU layer, flat formats) as a version-2 manifest."""
    net, fmt = data.get("network") or {}, data.get("formats") or {}

    def bits(key: str, default: int) -> int:
        return (fmt.get(key) or {}).get("bits", default)

    inp = dict(fmt.get("input") or {"bits": 8, "frac": 4})
    inp["size"] = net.get("input_size")
    return {
        "format_version": FORMAT_VERSION,
        "name": data.get("name"),
        "input": inp,
        "layers": [
            {
                "cell": net.get("cell"),
                "size": net.get("hidden_size"),
                "eps": net.get("eps", 0),
                "weight_bits": bits("weight", 8),
                "bias_bits": bits("bias", 16),
                "alpha_bits": bits("alpha", 8),
                "state_bits": bits("state", 16),
                "state_frac": fmt.get("state_frac", 0),
            }
        ],
        "readout": {
            "classes": net.get("num_classes"),
            "pooling": net.get("pooling", "last"),
            "weight_bits": bits("readout_weight", 8),
            "bias_bits": bits("readout_bias", 24),
        },
        "checksums": data.get("checksums", {}),
        "provenance": dict(data.get("provenance") or {}, upgraded_from_format_version=1),
    }


def parse_manifest(data: object, path: Path | None = None) -> Manifest:
    if not isinstance(data, dict):
        raise CodesignError("manifest must be a YAML mapping", path=path)
    version = data.get("format_version")
    if version not in READABLE_VERSIONS:
        raise CodesignError(
            f"bundle format version {version!r} found, this codesign reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
            path=path,
        )
    if version == 1:
        data = upgrade_v1(data)
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None
    check_host(manifest, path)
    return manifest


def checked_array(
    name: str, value: object, shape: tuple[int, ...], bounds: tuple[int, int], path: Path | None
) -> np.ndarray:
    """``value`` as int64 after its dtype (integers only), shape and range are checked."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise CodesignError(f"array '{name}' has dtype {arr.dtype}; bundles hold integers only", path=path)
    if arr.shape != shape:
        raise CodesignError(f"array '{name}' has shape {arr.shape}, the manifest implies {shape}", path=path)
    lo, hi = bounds
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < lo or arr.max() > hi):
        bad = arr[(arr < lo) | (arr > hi)].flat[0]
        raise CodesignError(f"array '{name}' holds {bad}, outside its allowed range [{lo}, {hi}]", path=path)
    return arr


def check_weights(
    manifest: Manifest, weights: dict[str, np.ndarray], path: Path | None = None
) -> dict[str, np.ndarray]:
    """Check names, dtypes, shapes and declared widths; return int64 copies."""
    table = array_table(manifest)
    missing = sorted(set(table) - set(weights))
    if missing:
        raise CodesignError(
            f"missing weight array(s) {missing}; this manifest needs {sorted(table)}", path=path
        )
    extra = sorted(set(weights) - set(table))
    if extra:
        raise CodesignError(
            f"unknown weight array(s) {extra}; this manifest needs {sorted(table)}", path=path
        )
    out: dict[str, np.ndarray] = {}
    for name, (shape, bits) in table.items():
        lo, hi = signed_range(bits)
        if name.endswith("dcls_delay"):
            lo, hi = 0, manifest.layers[int(name.split(".")[1])].dcls.span - 1
        if name.endswith("su_gate"):  # the selective-update schedule holds gate bits
            lo, hi = 0, 1
        arr = checked_array(name, weights[name], shape, (lo, hi), path)
        if name.endswith("_shift"):
            index = int(name.split(".")[1])
            acc = accumulator_bits(manifest, index)
            lo, hi = shift_bounds(acc)
            outside = np.flatnonzero((arr < lo) | (arr > hi))
            if outside.size:
                i = int(outside[0])
                raise CodesignError(
                    f"array '{name}' holds shift {arr[i]} at neuron {i}, outside [{lo}, {hi}]: with "
                    f"{acc}-bit accumulators a left shift may widen them to at most 53 bits",
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
    check_host(manifest)
    weights = check_weights(manifest, weights)
    blob = _npz_bytes(weights)
    manifest = manifest.model_copy(update={"checksums": {WEIGHTS: sha256(blob)}})
    bundle_dir = Path(bundle_dir)
    with atomic_dir(bundle_dir) as tmp:
        (tmp / WEIGHTS).write_bytes(blob)
        (tmp / MANIFEST).write_text(yaml.safe_dump(manifest.model_dump(mode="json"), sort_keys=False))
    return Bundle(manifest, weights, bundle_dir)


def _read_manifest(bundle_dir: Path) -> tuple[object, Path]:
    """The parsed YAML of ``manifest.yaml`` and its path (the directory and file must exist)."""
    if not bundle_dir.is_dir():
        raise CodesignError(
            "bundle directory not found (expected a folder with manifest.yaml and weights.npz)",
            path=bundle_dir,
        )
    mpath = bundle_dir / MANIFEST
    if not mpath.is_file():
        raise CodesignError("missing manifest.yaml", path=bundle_dir)
    try:
        return yaml.safe_load(mpath.read_text()), mpath
    except yaml.YAMLError as err:
        raise CodesignError(f"not valid YAML ({str(err).splitlines()[0]})", path=mpath) from None


def _read_weights(bundle_dir: Path, checksums: dict[str, str], mpath: Path) -> dict[str, np.ndarray]:
    """The arrays of ``weights.npz`` after its checksum is verified (never unpickled)."""
    wpath = bundle_dir / WEIGHTS
    if not wpath.is_file():
        raise CodesignError("missing weights.npz", path=bundle_dir)
    blob = wpath.read_bytes()
    want = checksums.get(WEIGHTS)
    if want is None:
        raise CodesignError(f"checksums.{WEIGHTS} missing from the manifest", path=mpath)
    if sha256(blob) != want:
        raise CodesignError(
            f"checksum mismatch: manifest says {want[:12]}..., file is {sha256(blob)[:12]}...", path=wpath
        )
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        raise CodesignError(f"not a readable npz of integer arrays ({err})", path=wpath) from None


def is_feature_manifest(data: object) -> bool:
    """A manifest of a random-feature network (``kind: features``)."""
    return isinstance(data, dict) and data.get("kind") == "features"


def load_bundle(bundle_dir: str | Path) -> Bundle:
    """Load and validate a bundle; every defect is a :class:`CodesignError` naming the file.

    A random-feature network (``kind: features``) is refused here with the commands that read it:
    the stages that take it call :func:`load_any_bundle`.
    """
    bundle_dir = Path(bundle_dir)
    data, mpath = _read_manifest(bundle_dir)
    if is_feature_manifest(data):
        raise CodesignError(
            "holds a random-feature network (kind: features), which this command does not take; "
            "codesign features eval, codesign rtl and the Python API's codesign.load read it",
            path=mpath,
        )
    manifest = parse_manifest(data, mpath)
    weights = _read_weights(bundle_dir, manifest.checksums, mpath)
    if isinstance(data, dict) and data.get("format_version") == 1:
        weights = {V1_ARRAYS.get(k, k): v for k, v in weights.items()}
    return Bundle(manifest, check_weights(manifest, weights, bundle_dir / WEIGHTS), bundle_dir)


# ---------------------------------------------------------------- random-feature networks


@dataclass(frozen=True)
class FeatureBundle:
    """A validated random-feature bundle: the manifest and its integer arrays (int64)."""

    manifest: FeatureManifest
    weights: dict[str, np.ndarray]
    path: Path | None = None


def check_feature_weights(
    manifest: FeatureManifest, weights: dict[str, np.ndarray], path: Path | None = None
) -> dict[str, np.ndarray]:
    """Names, dtypes, shapes and ranges of a feature bundle's arrays; return int64 copies."""
    table = manifest.array_table()
    wrong = sorted(set(table) ^ set(weights))
    if wrong:
        raise CodesignError(
            f"weight arrays {sorted(weights)} do not match this manifest's {sorted(table)} (first: {wrong[0]})",
            path=path,
        )
    return {
        name: checked_array(name, weights[name], shape, array_range(manifest, name, bits), path)
        for name, (shape, bits) in table.items()
    }


def parse_feature_manifest(data: object, path: Path | None = None) -> FeatureManifest:
    try:
        return FeatureManifest.model_validate(data)
    except ValidationError as err:
        raise CodesignError(validation_message(err), path=path) from None


def save_feature_bundle(
    bundle_dir: str | Path, manifest: FeatureManifest, weights: dict[str, np.ndarray]
) -> FeatureBundle:
    """Validate and write a random-feature bundle atomically."""
    weights = check_feature_weights(manifest, weights)
    blob = _npz_bytes(weights)
    manifest = manifest.model_copy(update={"checksums": {WEIGHTS: sha256(blob)}})
    bundle_dir = Path(bundle_dir)
    with atomic_dir(bundle_dir) as tmp:
        (tmp / WEIGHTS).write_bytes(blob)
        (tmp / MANIFEST).write_text(yaml.safe_dump(manifest.model_dump(mode="json"), sort_keys=False))
    return FeatureBundle(manifest, weights, bundle_dir)


def load_any_bundle(bundle_dir: str | Path) -> Bundle | FeatureBundle:
    """A recurrent bundle or a random-feature one, whichever the directory holds."""
    bundle_dir = Path(bundle_dir)
    data, mpath = _read_manifest(bundle_dir)
    if not is_feature_manifest(data):
        return load_bundle(bundle_dir)
    manifest = parse_feature_manifest(data, mpath)
    weights = _read_weights(bundle_dir, manifest.checksums, mpath)
    return FeatureBundle(manifest, check_feature_weights(manifest, weights, bundle_dir / WEIGHTS), bundle_dir)
