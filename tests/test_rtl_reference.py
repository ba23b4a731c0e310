"""The committed reference RTL (rtl/) is what the generator produces (run `make rtl` if not)."""

from pathlib import Path

from codesign.hw.reference import REFERENCE_AXI, REFERENCE_LANES, ROOT, regenerate


def test_every_reference_bundle_has_committed_rtl() -> None:
    bundles = {p.name for p in (ROOT / "models" / "bundles").iterdir() if (p / "manifest.yaml").is_file()}
    assert bundles == set(REFERENCE_LANES), "add the bundle to codesign.hw.reference.REFERENCE_LANES"


def test_committed_rtl_is_up_to_date(tmp_path: Path) -> None:
    regenerate(tmp_path)
    for name in [*REFERENCE_LANES, *(f"{b}_axi" for b in REFERENCE_AXI)]:
        fresh = (tmp_path / name / "accelerator.v").read_text()
        committed = (ROOT / "rtl" / name / "accelerator.v").read_text()
        assert fresh == committed, f"rtl/{name}/accelerator.v is stale: run `make rtl`"
        fresh_info = (tmp_path / name / "build.json").read_text()
        assert fresh_info == (ROOT / "rtl" / name / "build.json").read_text(), (
            f"rtl/{name}/build.json is stale"
        )
        for copy in ("manifest.yaml", "weights.npz"):
            bundle = (ROOT / "models" / "bundles" / name.removesuffix("_axi") / copy).read_bytes()
            assert (ROOT / "rtl" / name / copy).read_bytes() == bundle, (
                f"rtl/{name}/{copy} is stale: run `make rtl`"
            )
