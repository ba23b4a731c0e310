"""The committed reference RTL (rtl/) is what the generator produces today (run `make rtl` if not)."""

from pathlib import Path

from codesign.hw.reference import REFERENCE_LANES, ROOT, regenerate


def test_committed_rtl_is_up_to_date(tmp_path: Path) -> None:
    regenerate(tmp_path)
    for name in REFERENCE_LANES:
        fresh = (tmp_path / name / "accelerator.v").read_text()
        committed = (ROOT / "rtl" / name / "accelerator.v").read_text()
        assert fresh == committed, f"rtl/{name}/accelerator.v is stale: run `make rtl`"
