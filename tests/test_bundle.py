"""Bundle format: round trip and every defect refused with a clear message."""

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from codesign.bundle import load_bundle
from codesign.bundle.random import make_random_bundle
from codesign.errors import CodesignError


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    make_random_bundle(str(tmp_path / "b"), seed=3, d=5, inputs=4, classes=3)
    return tmp_path / "b"


def _edit_manifest(bundle_dir: Path, fn) -> None:
    path = bundle_dir / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data))


def _rewrite_weights(bundle_dir: Path, arrays: dict, *, fix_checksum: bool = True) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (bundle_dir / "weights.npz").write_bytes(buf.getvalue())
    if fix_checksum:
        from codesign.bundle.io import sha256

        _edit_manifest(bundle_dir, lambda d: d["checksums"].update({"weights.npz": sha256(buf.getvalue())}))


def test_round_trip(bundle_dir: Path) -> None:
    b = load_bundle(bundle_dir)
    assert b.manifest.layers[0].size == 5 and b.weights["layers.0.w_cand"].shape == (5, 4)
    assert b.weights["layers.0.w_cand"].dtype == np.int64


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(CodesignError, match="bundle directory not found"):
        load_bundle(tmp_path / "nope")


def test_unknown_key_named(bundle_dir: Path) -> None:
    _edit_manifest(bundle_dir, lambda d: d["layers"][0].update({"hiden_size": 3}))
    with pytest.raises(CodesignError, match=r"unknown key 'layers\.0\.hiden_size'"):
        load_bundle(bundle_dir)


def test_bad_value_named(bundle_dir: Path) -> None:
    _edit_manifest(bundle_dir, lambda d: d["layers"][0].update({"eps": 2}))
    with pytest.raises(CodesignError, match=r"layers\.0\.eps"):
        load_bundle(bundle_dir)


def test_old_version_reports_found_and_expected(bundle_dir: Path) -> None:
    _edit_manifest(bundle_dir, lambda d: d.update({"format_version": 0}))
    with pytest.raises(CodesignError, match="version 0 found, this codesign reads versions 1, 2"):
        load_bundle(bundle_dir)


def test_checksum_mismatch(bundle_dir: Path) -> None:
    b = load_bundle(bundle_dir)
    arrays = dict(b.weights)
    arrays["layers.0.alpha"] = arrays["layers.0.alpha"] + 1
    _rewrite_weights(bundle_dir, arrays, fix_checksum=False)
    with pytest.raises(CodesignError, match="checksum mismatch"):
        load_bundle(bundle_dir)


def test_out_of_range_integer(bundle_dir: Path) -> None:
    b = load_bundle(bundle_dir)
    arrays = dict(b.weights)
    arrays["layers.0.w_cand"] = arrays["layers.0.w_cand"].copy()
    arrays["layers.0.w_cand"][0, 0] = 128  # 8-bit weights end at 127
    _rewrite_weights(bundle_dir, arrays)
    with pytest.raises(
        CodesignError, match=r"'layers.0.w_cand' holds 128, outside its allowed range \[-128, 127\]"
    ):
        load_bundle(bundle_dir)


def test_missing_and_float_arrays(bundle_dir: Path) -> None:
    b = load_bundle(bundle_dir)
    arrays = {k: v for k, v in b.weights.items() if k != "readout.bias"}
    _rewrite_weights(bundle_dir, arrays)
    with pytest.raises(CodesignError, match=r"missing weight array\(s\) \['readout.bias'\]"):
        load_bundle(bundle_dir)
    arrays = dict(b.weights)
    arrays["layers.0.alpha"] = b.weights["layers.0.alpha"].astype(float)
    _rewrite_weights(bundle_dir, arrays)
    with pytest.raises(CodesignError, match="integers only"):
        load_bundle(bundle_dir)


def test_wrong_shape(bundle_dir: Path) -> None:
    b = load_bundle(bundle_dir)
    arrays = dict(b.weights)
    arrays["readout.weight"] = b.weights["readout.weight"].T.copy()
    _rewrite_weights(bundle_dir, arrays)
    with pytest.raises(
        CodesignError, match=r"'readout.weight' has shape \(5, 3\), the manifest implies \(3, 5\)"
    ):
        load_bundle(bundle_dir)


def test_pickled_array_refused(bundle_dir: Path) -> None:
    b = load_bundle(bundle_dir)
    arrays = dict(b.weights)
    arrays["layers.0.alpha"] = np.array([{"evil": 1}] * 5, dtype=object)
    _rewrite_weights(bundle_dir, arrays)
    with pytest.raises(CodesignError, match="weights.npz"):
        load_bundle(bundle_dir)


def test_corrupt_npz(bundle_dir: Path) -> None:
    _rewrite_weights(bundle_dir, {})
    blob = b"PK\x03\x04 not a zip"
    (bundle_dir / "weights.npz").write_bytes(blob)
    from codesign.bundle.io import sha256

    _edit_manifest(bundle_dir, lambda d: d["checksums"].update({"weights.npz": sha256(blob)}))
    with pytest.raises(CodesignError, match="not a readable npz"):
        load_bundle(bundle_dir)
    assert not zipfile.is_zipfile(bundle_dir / "weights.npz")


def test_malformed_yaml(bundle_dir: Path) -> None:
    (bundle_dir / "manifest.yaml").write_text("network: [unclosed")
    with pytest.raises(CodesignError, match="not valid YAML"):
        load_bundle(bundle_dir)


def test_save_is_atomic_on_failure(tmp_path: Path) -> None:
    """A failed write leaves the previous bundle intact."""
    from codesign.bundle import save_bundle

    make_random_bundle(str(tmp_path / "b"), seed=1, d=2, inputs=2, classes=2)
    before = (tmp_path / "b" / "weights.npz").read_bytes()
    b = load_bundle(tmp_path / "b")
    with pytest.raises(CodesignError):
        save_bundle(tmp_path / "b", b.manifest, dict(b.weights) | {"layers.0.alpha": np.array([999, 0])})
    assert (tmp_path / "b" / "weights.npz").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
