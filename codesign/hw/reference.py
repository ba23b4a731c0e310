"""Committed Verilog of the reference bundles (``rtl/<bundle>/accelerator.v``, and the AXI face of
one of them, ``rtl/<bundle>_axi/``).

``make rtl`` regenerates it with :func:`regenerate`; a test compares a fresh generation with the
committed file so the RTL in the repository never drifts from the generator.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_LANES = {
    "copy_first_cmru": 4,
    "spoken_digits_cmru": 4,
    "spoken_digits_mingru": 4,
    "spoken_digits_cmru_stack": 4,
    "japanese_vowels_cmru": 4,
    "japanese_vowels_cmru_d8": 4,
    "japanese_vowels_bmru_anneal": 4,
    "japanese_vowels_bmru_anneal_mm": 4,
    "japanese_vowels_cmru2": 4,
    "japanese_vowels_cmru2_su": 4,
    "japanese_vowels_cmru2_ref": 4,
    "japanese_vowels_mingru": 4,
    "flip_flop_bgmingru_dcls": 2,
    "parity_hsru": 2,
}
"""Reference bundle (``models/bundles/<name>``) -> lanes its committed RTL is generated with."""
REFERENCE_AXI = {"copy_first_cmru": 1}
"""Reference bundle -> lanes of its committed AXI-face build (``rtl/<name>_axi``, ``--bus axi``),
the example of ``docs/integration.md``."""


def regenerate(out_root: Path = ROOT / "rtl") -> list[Path]:
    from codesign.hw.build import build_rtl

    written = []
    for name, lanes in REFERENCE_LANES.items():
        build_rtl(ROOT / "models" / "bundles" / name, out_root / name, lanes=lanes)
        written.append(out_root / name / "accelerator.v")
    for name, lanes in REFERENCE_AXI.items():
        build_rtl(ROOT / "models" / "bundles" / name, out_root / f"{name}_axi", lanes=lanes, bus="axi")
        written.append(out_root / f"{name}_axi" / "accelerator.v")
    return written


if __name__ == "__main__":
    for path in regenerate():
        print(path)
