"""Module names: ``codesign rtl --name`` names the top and prefixes every module, so two builds
share one Verilog design; checked by elaborating two builds under one top and simulating each
of them through it, bit-exact against the golden model, under Icarus and Verilator."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign.bundle.random import make_random_bundle
from codesign.cli import app
from codesign.errors import CodesignError
from codesign.hw.build import build_rtl, build_top, check_module_name, module_name
from codesign.verify.runner import run_sim

_MODULE = re.compile(r"^module\s+\\?(\S+)\s*\(", re.MULTILINE)


def test_default_names_follow_the_bundle() -> None:
    assert module_name("copy_first_cmru") == "copy_first_cmru"
    assert module_name("my-net v2") == "my_net_v2"
    assert module_name("3layers") == "m_3layers"
    assert module_name("module") == "module_top"
    assert module_name("") == "m_"
    assert len(module_name("x" * 200)) == 64


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("9lives", "a letter or _"),
        ("a.b", "a letter or _"),
        ("wire", "Verilog keyword"),
        ("x" * 65, "at most 64"),
    ],
)
def test_bad_names_are_refused_with_the_rule(name: str, why: str) -> None:
    with pytest.raises(CodesignError, match=why):
        check_module_name(name)


def test_cli_refuses_a_bad_name_before_building(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["rtl", str(tmp_path), "--out", str(tmp_path / "o"), "--name", "a-b"])
    assert result.exit_code != 0
    assert "--name 'a-b'" in result.output and "letters, digits or _" in result.output
    assert not (tmp_path / "o").exists()


def _pair_verilog(face: dict, other: dict) -> str:
    """A top ``pair`` with ``face``'s ports (wired to it) and ``other``'s behind ``b_`` names."""
    ports = [*face["ports"], *(f"b_{p}" for p in other["ports"] if p not in ("clk", "rst"))]
    lines = [f"module pair({', '.join(ports)});"]
    for prefix, info in (("", face), ("b_", other)):
        for port, spec in info["ports"].items():
            if prefix and port in ("clk", "rst"):
                continue
            width = f"[{spec['width'] - 1}:0] " if spec["width"] > 1 else ""
            lines.append(f"  {'input' if spec['direction'] == 'in' else 'output'} {width}{prefix}{port};")
    for prefix, info in (("", face), ("b_", other)):
        conns = ", ".join(f".{p}({p if p in ('clk', 'rst') else prefix + p})" for p in info["ports"])
        lines.append(f"  {info['top']} u_{info['top']} ({conns});")
    return "\n".join([*lines, "endmodule", ""])


def _pair_build(face_dir: Path, other_dir: Path, out: Path) -> Path:
    """A build folder whose Verilog holds both builds under ``pair``, checked as ``face_dir``."""
    face = json.loads((face_dir / "build.json").read_text())
    other = json.loads((other_dir / "build.json").read_text())
    out.mkdir()
    text = "\n".join(
        [
            (face_dir / "accelerator.v").read_text(),
            (other_dir / "accelerator.v").read_text(),
            _pair_verilog(face, other),
        ]
    )
    (out / "accelerator.v").write_text(text)
    for name in ("manifest.yaml", "weights.npz"):
        shutil.copyfile(face_dir / name, out / name)
    info = face | {"top": "pair", "verilog_sha256": hashlib.sha256(text.encode()).hexdigest()}
    (out / "build.json").write_text(json.dumps(info, indent=2) + "\n")
    return out


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("names")
    make_random_bundle(str(root / "a"), seed=3, d=4, inputs=3, classes=3)
    make_random_bundle(str(root / "b"), seed=4, d=5, inputs=2, classes=4, cell="bmru", eps=0)
    build_rtl(root / "a", root / "build_a", lanes=2, counters="basic", name="alpha")
    build_rtl(root / "b", root / "build_b", lanes=1, counters="basic")
    return root / "build_a", root / "build_b"


def test_every_module_carries_the_top_name(two_builds: tuple[Path, Path]) -> None:
    a, b = two_builds
    assert build_top(a) == "alpha" and build_top(b) == "random_bmru_d5_m2_c4_s4"
    names = {}
    for build in (a, b):
        modules = _MODULE.findall((build / "accelerator.v").read_text())
        top = build_top(build)
        assert modules[0] == top and all(m.startswith(f"{top}.") for m in modules[1:]), modules
        names[build] = set(modules)
    assert not names[a] & names[b]


@pytest.mark.sim
@pytest.mark.parametrize("sim", ["icarus", pytest.param("verilator", marks=pytest.mark.long)])
def test_two_builds_in_one_top_simulate_bit_exact(two_builds, sim: str, tmp_path: Path) -> None:
    a, b = two_builds
    for face, other in ((a, b), (b, a)):
        pair = _pair_build(face, other, tmp_path / f"pair_{face.name}")
        report = run_sim(pair, sim=sim, vectors=3, max_steps=6, timeout_s=600)
        assert report.ok and report.sequences == 3, report.summary_line()
