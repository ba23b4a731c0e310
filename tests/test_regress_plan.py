"""The plan of `make sim`: the netlist designs and where Icarus runs less than Verilator."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "verification"))
import regress  # noqa: E402
import regress_plan  # noqa: E402
import regress_run  # noqa: E402


def _plan(tmp_path, *extra: str):
    args = regress.parse_args(
        ["--out", str(tmp_path), "--shapes", "2", "--selective-shapes", "0", "--bundles-per-shape", "3"]
        + list(extra)
    )
    return {d.name: d for d in regress_plan.plan_designs(args, tmp_path)}


def test_make_sim_simulates_a_up5k_netlist_and_the_chip_at_its_pins(tmp_path):
    designs = _plan(tmp_path, "--no-references")
    ports, pins = designs["netlist_up5k"], designs["netlist_pins_up5k"]
    assert ports.kind == pins.kind == "netlist" and ports.netlist == pins.netlist == "up5k"
    assert ports.sim_build == ports.build / "netlist" / "up5k" and not ports.pins
    assert pins.sim_build == pins.build / "pins" / "up5k" and pins.pins
    # the build step maps them: the netlist device and the pins flag travel with the build's arguments
    assert regress_run.build_args(pins)[-4:] == ("up5k", True, "none", "stream")
    assert designs["shape00"].sim_build == designs["shape00"].build
    assert "netlist_up5k" not in _plan(tmp_path, "--no-references", "--no-netlists")


def test_icarus_runs_less_where_verilator_covers_a_bundle_many_times(tmp_path):
    designs = _plan(tmp_path, "--no-references", "--icarus-bundles", "2")
    assert designs["shape00"].icarus_bundles == 2 and len(designs["shape00"].bundles) == 3
    # the four designs of one shape: the corners under Icarus on the first only
    assert designs["shared"].icarus_tests is None
    for name in ("serial", "narrow", "update"):
        assert "directed_corners" not in designs[name].icarus_tests
        assert "directed_corners" in designs[name].tests


def test_make_sim_drives_every_reference_bundle_and_two_random_shapes_over_axi(tmp_path):
    planned = _plan(tmp_path, "--no-netlists", "--no-references")
    assert not any(d.kind == "axi" for d in planned.values())  # planned beside the references
    args = regress.parse_args(["--out", str(tmp_path), "--shapes", "2", "--selective-shapes", "0"])
    axi = {d.name: d for d in regress_plan.axi_designs(args, tmp_path, list(planned.values()))}
    refs = {p.name for p in regress_plan.REFERENCES.iterdir() if (p / "manifest.yaml").is_file()}
    assert {f"axi_{r}" for r in refs} | {"axi_shape00", "axi_shape01"} == set(axi)
    assert all(d.kind == "axi" and regress_run.build_args(d)[-1] == "axi" for d in axi.values())
    assert all(axi[f"axi_{r}"].lanes == 1 and axi[f"axi_{r}"].weights == "baked" for r in refs)
    assert axi["axi_shape00"].weights == "runtime" and axi["axi_shape00"].bundle == planned["shape00"].bundle
