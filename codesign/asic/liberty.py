"""Write a Liberty library from the characterisation dicts of :mod:`codesign.asic.characterise`.

Units: time ns, capacitance pF, voltage V, leakage pW; internal energy in pJ (pF x V^2), the
Liberty convention for ``internal_power`` tables. Delays are 50 % to 50 %, transitions 10-90 %.
NLDM tables are indexed by input transition (``index_1``) and total output capacitance
(``index_2``). A flip-flop carries an ``ff`` group, a latch a ``latch`` group (what yosys
``dfflibmap`` reads), the clock gate ``clock_gating_integrated_cell`` and ``dont_use`` so that
abc never maps logic onto it; its output has no ``function`` (abc skips it).
"""

from __future__ import annotations

__all__ = ["library_name", "write_liberty"]

from codesign.asic.cells import PREFIX
from codesign.asic.pdk import Corner

_PW = 1e12


def library_name(c: Corner) -> str:
    """``sky130_codesign_tt_025C_1v80``: the library name of a corner."""
    return f"sky130_codesign_{c.lib_suffix}"


def _num(x: float) -> str:
    return f"{x:.6g}"


def _table(kind: str, template: str, rows: list[list[float]], indent: str) -> list[str]:
    values = ", ".join('"' + ", ".join(_num(v) for v in row) + '"' for row in rows)
    return [f"{indent}{kind} ({template}) {{", f"{indent}  values ({values});", f"{indent}}}"]


def _scalar(kind: str, value: float, indent: str) -> list[str]:
    return [f'{indent}{kind} (scalar) {{ values ("{_num(value)}"); }}']


def _header(c: Corner, slews: list[float], loads: list[float]) -> list[str]:
    idx1 = ", ".join(_num(s) for s in slews)
    idx2 = ", ".join(_num(x) for x in loads)
    lines = [
        f"library ({library_name(c)}) {{",
        "  delay_model : table_lookup;",
        "  in_place_swap_mode : match_footprint;",
        '  time_unit : "1ns";',
        '  voltage_unit : "1V";',
        '  current_unit : "1mA";',
        '  pulling_resistance_unit : "1kohm";',
        '  leakage_power_unit : "1pW";',
        "  capacitive_load_unit (1, pf);",
        f"  nom_process : 1; nom_voltage : {c.vdd:g}; nom_temperature : {c.temp_c:g};",
        f"  operating_conditions ({c.lib_suffix}) {{ process : 1; voltage : {c.vdd:g}; temperature : {c.temp_c:g}; }}",
        f"  default_operating_conditions : {c.lib_suffix};",
    ]
    for edge in ("rise", "fall"):
        lines += [
            f"  input_threshold_pct_{edge} : 50; output_threshold_pct_{edge} : 50;",
            f"  slew_lower_threshold_pct_{edge} : 10; slew_upper_threshold_pct_{edge} : 90;",
        ]
    lines += ["  slew_derate_from_library : 1;", "  default_cell_leakage_power : 0;"]
    lines += ["  default_input_pin_cap : 0.002; default_output_pin_cap : 0; default_fanout_load : 1;"]
    for group, name in (("lu_table_template", "delay_3x3"), ("power_lut_template", "energy_3x3")):
        lines += [
            f"  {group} ({name}) {{",
            "    variable_1 : input_transition_time;"
            if group == "power_lut_template"
            else "    variable_1 : input_net_transition;",
            "    variable_2 : total_output_net_capacitance;",
            f'    index_1 ("{idx1}");',
            f'    index_2 ("{idx2}");',
            "  }",
        ]
    return lines


def _when(levels: dict[str, int]) -> str:
    return "&".join(p if v else f"!{p}" for p, v in levels.items())


def _leakage(rec: dict) -> list[str]:
    by_inputs: dict[str, list[float]] = {}
    for row in rec["leakage"]:
        by_inputs.setdefault(_when(row["inputs"]), []).append(row["power"])
    lines = [f"    cell_leakage_power : {_num(rec['leakage_mean'] * _PW)};"]
    for when, powers in by_inputs.items():
        lines.append(
            f'    leakage_power () {{ when : "{when}"; value : {_num(sum(powers) / len(powers) * _PW)}; }}'
        )
    return lines


def _arc_lines(arc: dict) -> list[str]:
    ind = "      "
    lines = [f"{ind}timing () {{", f'{ind}  related_pin : "{arc["pin"]}";']
    lines.append(f"{ind}  timing_type : {arc.get('type', 'combinational')};")
    if arc.get("type", "combinational") == "combinational":
        lines.append(f"{ind}  timing_sense : {arc['sense']};")
    for key in ("cell_rise", "rise_transition", "cell_fall", "fall_transition"):
        lines += _table(key, "delay_3x3", arc[key], ind + "  ")
    lines += [f"{ind}}}", f"{ind}internal_power () {{", f'{ind}  related_pin : "{arc["pin"]}";']
    for key in ("rise_power", "fall_power"):
        lines += _table(key, "energy_3x3", arc[key], ind + "  ")
    return lines + [f"{ind}}}"]


def _input_pin(name: str, pin: dict, extra: list[str]) -> list[str]:
    lines = [
        f"    pin ({name}) {{",
        "      direction : input;",
        f"      capacitance : {_num(pin['capacitance'])};",
    ]
    lines += extra
    if "rise_energy" in pin:
        lines += ["      internal_power () {"]
        lines += _scalar("rise_power", pin["rise_energy"], "        ")
        lines += _scalar("fall_power", pin["fall_energy"], "        ")
        lines += ["      }"]
    return lines + ["    }"]


def _cell(rec: dict) -> list[str]:
    kind = rec["kind"]
    lines = [f"  cell ({PREFIX}{rec['cell']}) {{", f"    area : {_num(rec['area'])};"]
    lines += _leakage(rec)
    clock = rec["arcs"][0]["pin"] if kind != "comb" else ""
    out = next(iter(rec["outputs"]))
    if kind == "flop":
        data = next(p for p in rec["inputs"] if p != clock)
        lines.append(f'    ff (IQ, IQN) {{ next_state : "{data}"; clocked_on : "{clock}"; }}')
    elif kind == "latch":
        data = next(p for p in rec["inputs"] if p != clock)
        lines.append(f'    latch (IQ, IQN) {{ enable : "{clock}"; data_in : "{data}"; }}')
    elif kind == "clock_gate":
        lines += ['    clock_gating_integrated_cell : "latch_posedge";', "    dont_use : true;"]
    for name in rec["inputs"]:
        extra = []
        if name == clock:
            extra.append("      clock : true;")
            if kind == "clock_gate":
                extra.append("      clock_gate_clock_pin : true;")
        elif kind == "clock_gate":
            extra.append("      clock_gate_enable_pin : true;")
        if kind == "flop" and name != clock:
            extra += [
                "      timing () {",
                f'        related_pin : "{clock}";',
                "        timing_type : setup_rising;",
                *_scalar("rise_constraint", rec["setup"]["rise"], "        "),
                *_scalar("fall_constraint", rec["setup"]["fall"], "        "),
                "      }",
            ]
        lines += _input_pin(name, rec["pins"][name], extra)
    for name, function in rec["outputs"].items():
        lines += [f"    pin ({name}) {{", "      direction : output;"]
        if kind == "comb":
            lines.append(f'      function : "{function}";')
        elif kind in ("flop", "latch"):
            lines.append('      function : "IQ";')
        else:
            lines.append("      clock_gate_out_pin : true;")
        for arc in rec["arcs"]:
            if arc["output"] == name:
                lines += _arc_lines(arc)
        lines.append("    }")
    del out
    return lines + ["  }"]


def write_liberty(records: list[dict], c: Corner) -> str:
    """The Liberty text of ``records`` (one per cell, all characterised at corner ``c`` on one grid)."""
    if not records:
        raise ValueError("no characterised cells")
    first = records[0]
    lines = [
        f"/* sky130_fd_sc_hd cells characterised in ngspice by codesign.asic at {c.label}. */",
        *_header(c, first["slews"], first["loads"]),
    ]
    for rec in records:
        if rec["slews"] != first["slews"] or rec["loads"] != first["loads"]:
            raise ValueError(f"cell {rec['cell']} was characterised on another grid")
        lines += _cell(rec)
    return "\n".join(lines + ["}", ""])
