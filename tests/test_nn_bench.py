"""The scan benchmark runs end to end (tiny shapes) and reports every section as JSON."""

import json

from codesign.nn.bench import main


def test_quick_benchmark_reports_every_section(tmp_path, capsys) -> None:
    out = tmp_path / "bench.json"
    assert main(["--quick", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads(out.read_text())
    scan = report["scan"]
    for key in (
        "linear_scan_s",
        "floor_a_mul_b_add_b_s",
        "torch_cumsum_s",
        "eps1_cumulative_scan_s",
        "ratio_scan_to_floor",
        "ratio_eps1_to_torch_cumsum",
    ):
        assert scan[key] > 0
    assert report["long"]["speedup"] > 0
    tokens = report["cells"]["tokens_per_s"]
    assert {"MinGRU", "LRU", "MGRADELayer", "HSRU", "CMRU(eps=1)", "SelectiveUpdateGRU(fused)"} <= set(tokens)
    assert all(v > 0 for v in tokens.values())
    assert "available" in report["cells"]["mingru_pytorch"]
    finite = {k: v for k, v in report["finite"].items() if k != "T"}
    assert finite and all(finite.values())
    if report["memory"]["available"]:
        assert [row["T"] for row in report["memory"]["rows"]] == [4096, 16384]
        assert report["memory"]["fit_slope_in_tensors"] > 0
