"""The ECP5 DP16KD and MULT18X18D models against a flat bit array and Python's multiply, in Icarus."""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from codesign.errors import CodesignError
from codesign.fpga.ecp5_cells import check_modelled
from codesign.fpga.netlist import cell_models

BITS = 1024 * 18  # the block's array: 1024 words of 18 bits (16 Kib + parity)


@dataclass(frozen=True)
class Ram:
    width_a: int
    width_b: int
    mode_a: str = "NORMAL"
    mode_b: str = "NORMAL"
    resetmode: str = "SYNC"
    cs_a: str = "0b000"


def _pins(width: int, word: int, be: int) -> int:
    """The 14 address pins for ``word`` at ``width``: yosys' layout in brams_map_16kd.v."""
    if width <= 9:
        return word << {1: 0, 2: 1, 4: 2, 9: 3}[width]
    if width == 18:
        return (word << 4) | (be & 3)
    return (word << 5) | (be & 15)


def _bit(width: int, word: int, j: int) -> int:
    """Where bit ``j`` of ``word`` at ``width`` lives in the flat array of 18-bit words.

    Widths 9, 18 and 36 tile the array; widths 1, 2 and 4 tile its 16 data bits per word (0-7 and
    9-16), skipping the parity bits 8 and 17.
    """
    if width >= 9:
        return word * width + j
    d = word * width + j
    return (d // 16) * 18 + d % 16 + (d % 16 >= 8)


class Flat:
    """The reference: the block as one flat bit vector, bits placed by :func:`_bit`."""

    def __init__(self, init: int):
        self.bits = init

    def read(self, width: int, word: int) -> int:
        return sum(((self.bits >> _bit(width, word, j)) & 1) << j for j in range(width))

    def write(self, width: int, word: int, data: int, be: int) -> None:
        for j in range(width):
            if width < 18 or be >> (j // 9) & 1:
                pos = _bit(width, word, j)
                self.bits = (self.bits & ~(1 << pos)) | (((data >> j) & 1) << pos)


def _initvals(init: int) -> list[int]:
    """``init`` (flat, 18-bit words) as INITVAL_00..3F: 16 words at a 20-bit stride each."""
    out = []
    for idx in range(64):
        value = 0
        for i in range(16):
            value |= ((init >> ((idx * 16 + i) * 18)) & 0x3FFFF) << (20 * i)
        out.append(value)
    return out


def _port_op(rng: random.Random, width: int, can_write: bool) -> dict:
    depth = (BITS if width >= 9 else 16 * 1024) // width  # narrow widths skip the parity bits
    return {
        "ce": int(rng.random() < 0.85),
        "we": int(can_write and rng.random() < 0.5),
        "word": rng.randrange(depth) if rng.random() < 0.7 else rng.randrange(4),
        "data": rng.getrandbits(width),
        "be": rng.getrandbits(4) | (1 if rng.random() < 0.5 else 0),
        "rst": int(rng.random() < 0.05),
        "cs": rng.choice([0b000, 0b101]) if rng.random() < 0.3 else 0b000,
    }


def _expected(ram: Ram, flat: Flat, port: str, op: dict, out: int) -> int:
    """The port's output register after ``op``; ``flat`` is updated by its write."""
    width = ram.width_a if port == "A" else ram.width_b
    mode = ram.mode_a if port == "A" else ram.mode_b
    decode = int(ram.cs_a[2:], 2) if port == "A" else 0
    if op["rst"]:  # sync: ungated by CE, blocks the write; async: clears at once
        return 0
    if not op["ce"] or op["cs"] != decode:
        return out
    if width == 36 and port == "A":  # the write half of the pseudo dual port never reads
        if op["we"]:
            flat.write(width, op["word"], op["data"], op["be"])
        return out
    old = flat.read(width, op["word"])
    if op["we"]:
        flat.write(width, op["word"], op["data"], op["be"])
        if mode == "WRITETHROUGH":
            return flat.read(width, op["word"])
        return old if mode == "READBEFOREWRITE" else out
    return old


def _testbench(ram: Ram, init: int, ops: list[tuple[str, dict]]) -> str:
    params = [
        f".DATA_WIDTH_A({ram.width_a})",
        f".DATA_WIDTH_B({ram.width_b})",
        f'.WRITEMODE_A("{ram.mode_a}")',
        f'.WRITEMODE_B("{ram.mode_b}")',
        f'.RESETMODE("{ram.resetmode}")',
        f'.CSDECODE_A("{ram.cs_a}")',
    ] + [f".INITVAL_{i:02X}(320'h{v:080x})" for i, v in enumerate(_initvals(init))]
    pins = []
    for p in "AB":
        pins += [f".AD{p}{i}(ad{p.lower()}[{i}])" for i in range(14)]
        pins += [f".DI{p}{i}(di{p.lower()}[{i}])" for i in range(18)]
        pins += [f".DO{p}{i}(do{p.lower()}[{i}])" for i in range(18)]
        pins += [f".CS{p}{i}(cs{p.lower()}[{i}])" for i in range(3)]
        pins += [f".{s}{p}({s.lower()}{p.lower()})" for s in ("CE", "WE", "RST", "OCE")]
        pins += [f".CLK{p}(clk)"]
    steps = []
    for port, op in ops:
        p = port.lower()
        q = "b" if p == "a" else "a"
        width = ram.width_a if port == "A" else ram.width_b
        data = op["data"]
        if width == 36:
            steps.append(f"dia = 18'h{data & 0x3FFFF:x}; dib = 18'h{data >> 18:x};")
        else:
            steps.append(f"di{p} = 18'h{data:x};")
        steps.append(
            f"ad{p} = 14'h{_pins(width, op['word'], op['be']):x}; ce{p} = {op['ce']}; we{p} = {op['we']}; "
            f"rst{p} = {op['rst']}; cs{p} = 3'd{op['cs']}; ce{q} = 0; we{q} = 0; rst{q} = 0;"
        )
        steps.append('#5 clk = 1; #1 $display("%h %h", doa, dob); #4 clk = 0;')
    return f"""
module tb;
	reg clk = 0;
	reg [13:0] ada = 0, adb = 0;
	reg [17:0] dia = 0, dib = 0;
	reg [2:0] csa = 0, csb = 0;
	reg cea = 0, ceb = 0, wea = 0, web = 0, rsta = 0, rstb = 0, ocea = 1, oceb = 1;
	wire [17:0] doa, dob;
	DP16KD #({", ".join(params)}) dut ({", ".join(pins)});
	initial begin
		{chr(10).join(steps)}
		$finish;
	end
endmodule
"""


def _run(tmp_path: Path, top: str, source: str) -> list[str]:
    (tmp_path / "tb.v").write_text(source + "\n" + cell_models("ecp5-25k"))
    subprocess.run(
        ["iverilog", "-g2005", "-s", top, "-o", str(tmp_path / "tb.vvp"), str(tmp_path / "tb.v")],
        check=True,
        timeout=120,
        capture_output=True,
    )
    run = subprocess.run(
        ["vvp", "-n", str(tmp_path / "tb.vvp")], check=True, timeout=120, capture_output=True, text=True
    )
    return [line for line in run.stdout.splitlines() if line and not line.startswith("VCD")]


RAMS = [
    Ram(18, 18, "NORMAL", "WRITETHROUGH"),
    Ram(9, 18, "READBEFOREWRITE", "READBEFOREWRITE", resetmode="ASYNC"),
    Ram(9, 9, "WRITETHROUGH", "NORMAL", cs_a="0b101"),
    Ram(36, 36),
    Ram(36, 9),
    Ram(18, 9, "READBEFOREWRITE", "NORMAL"),
    Ram(4, 18, "WRITETHROUGH", "READBEFOREWRITE"),
    Ram(1, 2, "READBEFOREWRITE", "WRITETHROUGH", resetmode="ASYNC"),
    Ram(2, 9, "NORMAL", "WRITETHROUGH"),
    Ram(36, 4),
    Ram(36, 1),
]


@pytest.mark.sim
@pytest.mark.parametrize("ram", RAMS, ids=lambda r: f"{r.width_a}x{r.width_b}-{r.mode_a}-{r.mode_b}")
def test_the_dp16kd_model_matches_a_flat_array(ram, tmp_path):
    rng = random.Random(f"{ram}")
    init = rng.getrandbits(BITS)
    pdp = ram.width_a == 36  # port A writes, port B reads
    ops = []
    for _ in range(300):
        port = rng.choice("AB")
        width = ram.width_a if port == "A" else ram.width_b
        ops.append((port, _port_op(rng, width, can_write=not (pdp and port == "B"))))
        if pdp and port == "A":
            ops[-1][1]["rst"] = 0
    flat, out = Flat(init), {"A": 0, "B": 0}
    expected = []
    for port, op in ops:
        out[port] = _expected(ram, flat, port, op, out[port])
        if ram.width_b == 36:
            expected.append(f"{out['B'] & 0x3FFFF:05x} {out['B'] >> 18:05x}")
        else:
            expected.append(f"{out['A']:05x} {out['B']:05x}")
    got = _run(tmp_path, "tb", _testbench(ram, init, ops))
    assert len(got) == len(ops)
    for cycle, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"cycle {cycle} ({ops[cycle]}): DOA DOB {g}, expected {e}"


@pytest.mark.sim
def test_the_mult18x18d_model_multiplies_signed_and_unsigned(tmp_path):
    rng = random.Random(7)
    cases = [
        (rng.getrandbits(18), rng.getrandbits(18), sa, sb)
        for sa in (0, 1)
        for sb in (0, 1)
        for _ in range(25)
    ]
    cases += [(0x20000, 0x20000, 1, 1), (0x3FFFF, 0x3FFFF, 0, 0), (0x3FFFF, 0x3FFFF, 1, 0)]
    pins = ", ".join(
        [f".A{i}(a[{i}])" for i in range(18)]
        + [f".B{i}(b[{i}])" for i in range(18)]
        + [f".P{i}(p[{i}])" for i in range(36)]
        + [".SIGNEDA(sa)", ".SIGNEDB(sb)"]
    )
    steps = "\n".join(
        f"a = 18'h{a:x}; b = 18'h{b:x}; sa = {sa}; sb = {sb}; #1 $display(\"%h\", p);"
        for a, b, sa, sb in cases
    )
    source = f"module tb; reg [17:0] a, b; reg sa, sb; wire [35:0] p; MULT18X18D m ({pins}); initial begin\n{steps}\n$finish; end endmodule"
    got = _run(tmp_path, "tb", source)

    def value(x: int, signed: int) -> int:
        return x - (1 << 18) if signed and x >> 17 else x

    expected = [f"{(value(a, sa) * value(b, sb)) & ((1 << 36) - 1):09x}" for a, b, sa, sb in cases]
    assert got == expected


def test_a_dp16kd_mode_the_model_lacks_is_refused_by_name():
    netlist = """
  DP16KD #(
    .DATA_WIDTH_A(32'd8),
    .DATA_WIDTH_B(32'd18),
    .REGMODE_B("OUTREG")
  ) \\mem.0.0  (
    .ADA0(1'h0)
  );
"""
    with pytest.raises(
        CodesignError, match=r"DP16KD \\mem.0.0: DATA_WIDTH_A=8, REGMODE_B=OUTREG is not modelled"
    ):
        check_modelled(netlist)
    assert check_modelled(netlist.replace("32'd8", "32'd4").replace("OUTREG", "NOREG")) == 1


def _ram_rtl(width: int, depth: int) -> str:
    """A one-write-port, one-read-port RAM with hashed initial contents, read before write."""
    ab = depth.bit_length() - 1
    return f"""
module ram(input clk, input we, input [{ab - 1}:0] wa, input [{width - 1}:0] wd, input [{ab - 1}:0] ra,
           output reg [{width - 1}:0] rd);
	reg [{width - 1}:0] m [0:{depth - 1}];
	integer i;
	initial for (i = 0; i < {depth}; i = i + 1) m[i] = (i * 32'h9E3779B1) >> 11;
	always @(posedge clk) begin
		if (we) m[wa] <= wd;
		rd <= m[ra];
	end
endmodule
"""


def _ram_bench(width: int, depth: int, seed: int) -> str:
    rng = random.Random(seed)
    steps = []
    for _ in range(300):
        wa, ra = rng.randrange(depth), rng.randrange(depth) if rng.random() < 0.7 else rng.randrange(8)
        steps.append(
            f"we = {int(rng.random() < 0.4)}; wa = {wa}; ra = {ra}; wd = {width}'h{rng.getrandbits(width):x}; "
            '#5 clk = 1; #1 $display("%h", rd); #4 clk = 0;'
        )
    ab = depth.bit_length() - 1
    return f"""
module tb;
	reg clk = 0, we = 0;
	reg [{ab - 1}:0] wa = 0, ra = 0;
	reg [{width - 1}:0] wd = 0;
	wire [{width - 1}:0] rd;
	ram dut (.clk(clk), .we(we), .wa(wa), .wd(wd), .ra(ra), .rd(rd));
	initial begin
		{chr(10).join(steps)}
		$finish;
	end
endmodule
"""


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize(
    "width", [pytest.param(w, marks=pytest.mark.long) if w != 4 else w for w in (1, 2, 4, 8, 16, 32)]
)
def test_a_ram_that_synth_ecp5_maps_to_a_dp16kd_simulates_as_its_rtl(width, tmp_path):
    """yosys' mapping of a RAM (its INITVAL layout, address and data pins) and the model agree."""
    from codesign.fpga.tools import run_tool

    depth = 16384 // width
    (tmp_path / "ram.v").write_text(_ram_rtl(width, depth))
    (tmp_path / "s.ys").write_text("read_verilog ram.v\nsynth_ecp5 -top ram\nwrite_verilog -noattr n.v\n")
    run_tool("yosys", ["-q", "-s", "s.ys"], cwd=tmp_path, timeout=300, what="ram")
    netlist = (tmp_path / "n.v").read_text()
    assert check_modelled(netlist) == 1, "the RAM is not one DP16KD"
    bench = _ram_bench(width, depth, seed=width)
    rtl = _run(tmp_path, "tb", bench + _ram_rtl(width, depth))
    mapped = _run(tmp_path, "tb", bench + netlist)
    assert len(rtl) == 300 and "x" not in "".join(rtl)
    assert mapped == rtl
