"""The AXI face (``codesign rtl --bus axi``): its register map and TDATA layouts in build.json, the
flows that drive the stream face refusing it, and cocotbext-axi simulations with stalls on every
channel, bit-exact against the golden model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign.bundle.random import make_random_bundle
from codesign.cli import app
from codesign.errors import CodesignError
from codesign.fpga.ports import load_port_map
from codesign.hw.build import build_rtl
from codesign.hw.faces import COUNTER_BASE, info_word
from codesign.verify.axi import run_axi
from codesign.verify.runner import run_sim

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = sorted(p.name for p in (ROOT / "models" / "bundles").iterdir() if (p / "manifest.yaml").is_file())


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("faces") / "b"
    make_random_bundle(str(path), seed=5, d=5, inputs=3, classes=3)
    return path


@pytest.fixture(scope="module")
def axi_build(bundle: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("faces") / "axi"
    build_rtl(bundle, out, lanes=2, bus="axi", name="npu")
    return out


def test_build_json_has_the_register_map_and_layouts(axi_build: Path) -> None:
    info = json.loads((axi_build / "build.json").read_text())
    assert info["bus"] == "axi" and info["top"] == "npu" and info["clock"] == "aclk"
    assert {"aclk", "aresetn", "s_axis_tdata", "m_axis_tlast", "s_axil_rdata"} <= set(info["ports"])
    assert "clk" not in info["ports"] and "counters" not in info["ports"]
    axi = info["axi"]
    regs = axi["registers"]
    addresses = [r["address"] for r in regs]
    assert len(set(addresses)) == len(addresses) and all(a % 4 == 0 for a in addresses)
    assert [r["name"] for r in regs[:4]] == ["ID", "INFO", "STATUS", "CONTROL"]
    counters = [r for r in regs if r["name"].startswith("CNT_")]
    assert [r["name"] for r in counters] == [f"CNT_{c.upper()}" for c in info["plan"]["counters"]]
    assert counters[0]["address"] == COUNTER_BASE
    assert max(addresses) < 1 << axi["address_bits"] == 1 << info["ports"]["s_axil_araddr"]["width"]
    assert regs[0]["reset"] == axi["identity"] and regs[1]["reset"] == 2 | len(counters) << 8
    assert (
        axi["s_axis_tdata_bits"] == info["ports"]["s_axis_tdata"]["width"] == 8 * 2
    )  # index 2 + value 8 bits
    assert set(axi["m_axis_tdata"]) == {"logits[0]", "logits[1]", "group", "class_index"}
    text = (axi_build / "accelerator.v").read_text()
    assert "module npu(" in text and "module \\npu.core " in text


def test_info_word_packs_lanes_counters_and_mode() -> None:
    class Plan:
        lanes, counters = 300, ["a"] * 7

    assert info_word(Plan, "spram") == 255 | 7 << 8 | 3 << 16


def test_stream_flows_refuse_an_axi_build(axi_build: Path) -> None:
    with pytest.raises(CodesignError, match="rebuild with --bus stream"):
        run_sim(axi_build)
    with pytest.raises(CodesignError, match="bus is 'axi'"):
        load_port_map(axi_build)


def test_stream_build_is_refused_by_run_axi(bundle: Path, tmp_path: Path) -> None:
    build_rtl(bundle, tmp_path / "s", lanes=1, counters="none")
    with pytest.raises(CodesignError, match="rebuild with `codesign rtl --bus axi`"):
        run_axi(tmp_path / "s")


def test_cli_names_the_allowed_buses(bundle: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["rtl", str(bundle), "--out", str(tmp_path / "o"), "--bus", "apb"])
    assert result.exit_code != 0 and "--bus 'apb': allowed: stream, axi" in result.output


@pytest.mark.sim
@pytest.mark.parametrize("sim", ["icarus", pytest.param("verilator", marks=pytest.mark.long)])
def test_axi_face_is_bit_exact_under_stalls(axi_build: Path, sim: str) -> None:
    record = run_axi(axi_build, sim, vectors=4, max_steps=8, seed=3)
    assert record["mismatches"] == 0 and "error" not in record, record["first_mismatch"]
    assert record["sequences"] == 4 and record["counted"] == {"sequences": 4, "results": 4}


@pytest.mark.sim
def test_axi_testbench_catches_a_wrong_result(bundle: Path, tmp_path: Path) -> None:
    build_rtl(bundle, tmp_path / "f", lanes=2, bus="axi", faults={"readout_bias_ignored"})
    record = run_axi(tmp_path / "f", vectors=2, max_steps=4)
    assert record["mismatches"] == 2 and "!= golden" in record["first_mismatch"]


@pytest.mark.sim
def test_runtime_weights_load_through_the_registers(bundle: Path, tmp_path: Path) -> None:
    build_rtl(bundle, tmp_path / "r", lanes=1, bus="axi", weights="runtime", counters="basic")
    record = run_axi(tmp_path / "r", vectors=3, max_steps=6, seed=1)
    assert record["mismatches"] == 0 and "error" not in record, record["first_mismatch"]
    assert record["config_writes"] > 0


@pytest.mark.sim
@pytest.mark.long
def test_spram_build_refuses_inputs_until_loaded(tmp_path: Path) -> None:
    build_rtl(
        ROOT / "models" / "bundles" / "copy_first_cmru",
        tmp_path / "s",
        bus="axi",
        weights="spram",
        target="up5k",
    )
    record = run_axi(tmp_path / "s", vectors=2, max_steps=5, seed=2)
    assert record["refused_before_load"] and record["mismatches"] == 0 and "error" not in record, record


@pytest.mark.sim
@pytest.mark.long
@pytest.mark.parametrize("name", REFERENCE)
def test_every_reference_bundle_at_p1_over_axi(name: str, tmp_path: Path) -> None:
    build_rtl(ROOT / "models" / "bundles" / name, tmp_path / "b", lanes=1, bus="axi")
    record = run_axi(tmp_path / "b", "verilator", vectors=3, max_steps=12, seed=4)
    assert record["mismatches"] == 0 and "error" not in record, record["first_mismatch"]
