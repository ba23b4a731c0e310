"""PLL dividers from a board oscillator to the design clock, and the PLL primitive that makes it.

* **iCE40** (``SB_PLL40_PAD``, simple feedback), as ``icepll`` computes them:
  ``f_pfd = f_in / (DIVR + 1)`` in 10 .. 133 MHz, ``f_vco = f_pfd * (DIVF + 1)`` in 533 .. 1066 MHz,
  ``f_out = f_vco / 2**DIVQ`` in 16 .. 275 MHz (``DIVR`` 0 .. 15, ``DIVF`` 0 .. 127, ``DIVQ`` 1 .. 6);
  the loop filter range follows ``f_pfd``.
* **ECP5** (``EHXPLLL``, feedback from ``CLKOP``), as ``ecppll`` computes them:
  ``f_out = f_in * CLKFB_DIV / CLKI_DIV`` with ``f_in / CLKI_DIV`` in 3.125 .. 400 MHz,
  ``f_vco = f_out * CLKOP_DIV`` in 400 .. 800 MHz (``CLKI_DIV`` 1 .. 128, ``CLKFB_DIV`` 1 .. 80,
  ``CLKOP_DIV`` 1 .. 128), ``f_out`` 3.125 .. 400 MHz.

Among the settings that reach the closest frequency, the one with the highest ``f_pfd`` (less
jitter) and then a VCO nearest the middle of its range is taken.
"""

from __future__ import annotations

__all__ = ["Pll", "ecp5_pll", "ice40_pll", "pll_instance"]

from dataclasses import dataclass

from codesign.errors import CodesignError


@dataclass(frozen=True)
class Pll:
    family: str  # "ice40" or "ecp5"
    f_in_mhz: float
    f_out_mhz: float  # what the dividers give
    params: dict[str, int]
    asked_mhz: float

    @property
    def error(self) -> float:
        """Relative distance of ``f_out_mhz`` from the frequency asked for."""
        return abs(self.f_out_mhz - self.asked_mhz) / self.asked_mhz


def _filter_range(f_pfd: float) -> int:
    for bound, value in ((17, 1), (26, 2), (44, 3), (66, 4), (101, 5)):
        if f_pfd < bound:
            return value
    return 6


def ice40_pll(f_in_mhz: float, f_out_mhz: float) -> Pll:
    """The ``SB_PLL40`` dividers closest to ``f_out_mhz`` from ``f_in_mhz``."""
    if not 10 <= f_in_mhz <= 133:
        raise CodesignError(f"an iCE40 PLL takes 10 .. 133 MHz, not {f_in_mhz:g} MHz")
    if not 16 <= f_out_mhz <= 275:
        raise CodesignError(f"an iCE40 PLL makes 16 .. 275 MHz, not {f_out_mhz:g} MHz")
    best = None
    for divr in range(16):
        f_pfd = f_in_mhz / (divr + 1)
        if not 10 <= f_pfd <= 133:
            continue
        for divf in range(128):
            f_vco = f_pfd * (divf + 1)
            if not 533 <= f_vco <= 1066:
                continue
            for divq in range(1, 7):
                f_out = f_vco / 2**divq
                if not 16 <= f_out <= 275:
                    continue
                key = (abs(f_out - f_out_mhz), -f_pfd, abs(f_vco - 800))
                if best is None or key < best[0]:
                    best = (key, divr, divf, divq, f_pfd, f_out)
    if best is None:
        raise CodesignError(f"no iCE40 PLL setting makes {f_out_mhz:g} MHz from {f_in_mhz:g} MHz")
    _, divr, divf, divq, f_pfd, f_out = best
    params = {"DIVR": divr, "DIVF": divf, "DIVQ": divq, "FILTER_RANGE": _filter_range(f_pfd)}
    return Pll("ice40", f_in_mhz, f_out, params, f_out_mhz)


def ecp5_pll(f_in_mhz: float, f_out_mhz: float) -> Pll:
    """The ``EHXPLLL`` dividers closest to ``f_out_mhz`` from ``f_in_mhz``."""
    if not 8 <= f_in_mhz <= 400:
        raise CodesignError(f"an ECP5 PLL takes 8 .. 400 MHz, not {f_in_mhz:g} MHz")
    if not 3.125 <= f_out_mhz <= 400:
        raise CodesignError(f"an ECP5 PLL makes 3.125 .. 400 MHz, not {f_out_mhz:g} MHz")
    best = None
    for clki in range(1, 129):
        f_pfd = f_in_mhz / clki
        if not 3.125 <= f_pfd <= 400:
            continue
        for clkfb in range(1, 81):
            f_out = f_pfd * clkfb
            if not 3.125 <= f_out <= 400:
                continue
            for clkop in range(1, 129):
                f_vco = f_out * clkop
                if not 400 <= f_vco <= 800:
                    continue
                key = (abs(f_out - f_out_mhz), -f_pfd, abs(f_vco - 600))
                if best is None or key < best[0]:
                    best = (key, clki, clkfb, clkop, f_out)
    if best is None:
        raise CodesignError(f"no ECP5 PLL setting makes {f_out_mhz:g} MHz from {f_in_mhz:g} MHz")
    _, clki, clkfb, clkop, f_out = best
    params = {"CLKI_DIV": clki, "CLKFB_DIV": clkfb, "CLKOP_DIV": clkop, "CLKOP_CPHASE": clkop - 1}
    return Pll("ecp5", f_in_mhz, f_out, params, f_out_mhz)


def pll_instance(pll: Pll, clk_in, clk_out, lock):
    """The Amaranth ``Instance`` of ``pll``: ``clk_in`` (the board clock pin) to ``clk_out``."""
    from amaranth import Const, Instance

    p = pll.params
    if pll.family == "ice40":
        return Instance(
            "SB_PLL40_PAD",
            p_FEEDBACK_PATH="SIMPLE",
            p_DIVR=p["DIVR"],
            p_DIVF=p["DIVF"],
            p_DIVQ=p["DIVQ"],
            p_FILTER_RANGE=p["FILTER_RANGE"],
            i_PACKAGEPIN=clk_in,
            i_RESETB=Const(1),
            i_BYPASS=Const(0),
            o_PLLOUTGLOBAL=clk_out,
            o_LOCK=lock,
        )
    return Instance(
        "EHXPLLL",
        a_FREQUENCY_PIN_CLKI=f"{pll.f_in_mhz:g}",
        a_FREQUENCY_PIN_CLKOP=f"{pll.f_out_mhz:g}",
        a_ICP_CURRENT="12",
        a_LPF_RESISTOR="8",
        a_MFG_ENABLE_FILTEROPAMP="1",
        a_MFG_GMCREF_SEL="2",
        p_PLLRST_ENA="DISABLED",
        p_INTFB_WAKE="DISABLED",
        p_STDBY_ENABLE="DISABLED",
        p_DPHASE_SOURCE="DISABLED",
        p_OUTDIVIDER_MUXA="DIVA",
        p_CLKOP_ENABLE="ENABLED",
        p_CLKOP_DIV=p["CLKOP_DIV"],
        p_CLKOP_CPHASE=p["CLKOP_CPHASE"],
        p_CLKOP_FPHASE=0,
        p_FEEDBK_PATH="CLKOP",
        p_CLKI_DIV=p["CLKI_DIV"],
        p_CLKFB_DIV=p["CLKFB_DIV"],
        i_CLKI=clk_in,
        i_CLKFB=clk_out,
        i_RST=Const(0),
        i_STDBY=Const(0),
        i_PHASESEL0=Const(0),
        i_PHASESEL1=Const(0),
        i_PHASEDIR=Const(0),
        i_PHASESTEP=Const(0),
        i_PHASELOADREG=Const(0),
        i_PLLWAKESYNC=Const(0),
        i_ENCLKOP=Const(0),
        o_CLKOP=clk_out,
        o_LOCK=lock,
    )
