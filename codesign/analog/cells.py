"""Transistor-level cells as SPICE text: the BMRU memory cell, the DPI low-pass, the native CMRU ladder.

All devices are sky130 ``nfet_01v8`` / ``pfet_01v8`` (subcircuits, W/L in um under
``.option scale=1.0u``) working in weak inversion at 1.8 V. Current-setting devices are 4/8 um
(matching), switches 1/0.5 um. Every bias voltage comes from a diode-connected pFET fed by a bias
current, so every learned parameter is a current; bias currents are drawn from a separate supply
``vddb`` so that core and bias-generator power can be told apart.

BMRU cell (``bmru_core``, 10 transistors; schematic in ``docs/analog.md``):

* node ``x``: the input current ``I_in`` (into port ``in``, an nFET diode) is mirrored by an
  nFET with a cascode (gate ``vcn``) and sinks from ``x``; a pFET sources ``I_DOWN`` into ``x``; a
  second pFET source of ``I_UP - I_DOWN`` is switched into ``x`` by a pFET gated by ``y``.
* ``y = not x`` (pFET source ``I_B2``, nFET pull-down gated by ``x``): positive feedback. While
  ``x`` is high (state low) the switch is on and ``x`` falls only when ``I_in > I_UP``; once ``x``
  is low the switch is off and ``x`` rises only when ``I_in < I_DOWN``.
* output: a pFET source of ``I_ALPHA`` passed by a pFET switch gated by ``x`` (on when ``x`` low).

Thresholds that change every step (``bmru_core_dyn``, 12 transistors) use the same loop, but the
switched branch is a pFET copy of ``I_UP`` minus a cascoded nFET copy of ``I_DOWN`` (node ``h``):
a hysteresis-width bias of its own would carry pA for narrow windows and take ~10 ms to settle,
while ``I_UP`` and ``I_DOWN`` stay at or above 0.15 nA in the bundle mapping and settle in well
under a millisecond.

The cascodes keep the nFET mirror outputs at their diodes' drain voltage: sky130's nFET loses
about 11 %/V of output resistance in weak inversion, which without them put the up threshold 6 %
low. Switching takes ``C_x * dV / overdrive``: about 0.3 / 0.8 ms (set / reset) at 50 pA,
1 / 2.3 ms at 14 pA, 2 / 4.6 ms at 5 pA; a golden-model step is therefore a 10 ms frame.

DPI (``dpi``, Bartolozzi & Indiveri 2007): an nFET differential pair whose tail is the mirrored
input, one branch diode-connected on the capacitor node ``vc`` (capacitor to ``vdd``), the other
gated by ``vbth`` (the diode voltage of ``I_TH``); a pFET sources ``I_TAU`` into ``vc``; pFETs
gated by ``vc`` give two copies of the output. ``tau = C U_T / (kappa I_TAU)`` and
``I_out = (I_TH / I_TAU) I_in`` for ``I_out >> I_TH``; both constants are calibrated in simulation
(the pair is nFET, the output pFET: ``I_out ~ I_in^(kappa_p / kappa_n)``).

Native CMRU (``cmru_native_<N>``): ``N`` BMRU stages. Stage ``k``'s input is
``I_in + D_{k-1} + D_{k+1}``, where ``D_j`` is the DPI-filtered output of stage ``j`` (-> alpha
while stage ``j`` is on); stage 1's window is ``[I_DOWN, I_UP]``, the others' are shifted up by
alpha. With ``n`` stages on, stages ``n`` and ``n + 1`` see ``I_in + alpha``, stages below see
``I_in + 2 alpha`` and stages above ``I_in``: a set level (``I_in > I_UP``) switches stage
``n + 1`` on, and stage ``n + 2`` only after ``D_{n+1}`` has risen (about 1.3 tau); a reset level
(``I_in < I_DOWN``) switches stage ``n`` off, and ``n - 1`` only after ``D_n`` has decayed; the
retain level (the window centre) leaves every stage where it is. The output is the sum of the
stage outputs, ``n * alpha``: a set pulse shorter than ~1.5 tau adds exactly one alpha, a held set
level climbs one alpha about every 13 ms (1.3 tau; CMRU Fig. 4C: every 10 ms).
"""

from __future__ import annotations

from dataclasses import dataclass

NFET = "sky130_fd_pr__nfet_01v8"
PFET = "sky130_fd_pr__pfet_01v8"
VDD = 1.8
VOUT = 0.5
"""Voltage the testbenches hold output nodes at (about an nFET diode input of a next stage)."""

SRC = "W=4 L=8"
PAIR = "W=40 L=1"
"""The kappa-matched DPI's differential pair (wide: headroom for the tail, see ``dpi_n``)."""
SW = "W=1 L=0.5"

I_B2 = 0.1e-9
"""Bias of the second (y) stage of every BMRU, shared."""
I_CAS = 0.1e-9
"""Current through the nFET stack that makes the cascode gate voltage, shared."""
I_FLOOR = 1e-12
"""Floor current into every ladder DPI (below I_TAU, so the output still decays to zero): it keeps
the differential pair's tail node defined, which makes the ladder's operating point converge in
seconds instead of minutes."""


@dataclass(frozen=True)
class DpiParams:
    """DPI time constant and gain settings; defaults calibrated for tau = 10 ms, gain 1 at 0.5 nA (tt)."""

    c: float = 2e-12
    i_tau: float = 9.2e-12
    i_th: float = 19.1e-12
    tau_target: float = 10e-3
    kind: str = "p"
    """``p``: the first DPI (nFET pair, pFET output: its output is the pair's first-order state to
    the power kappa_p / kappa_n, 0.84-1.02 over the corners, so rise and fall split and the gain moves
    0.73-1.27); ``n``: the kappa-matched ``dpi_n`` (nFET output, nFET-diode biases)."""

    @property
    def cell(self) -> str:
        """The characterisation subcircuit (with its bias generator) of this kind."""
        return {"p": "dpi_cell", "n": "dpi_n_cell"}[self.kind]


DPI_N = DpiParams(c=2e-12, i_tau=9.08e-12, i_th=10.90e-12, kind="n")
"""The kappa-matched DPI calibrated at tt for tau = 10 ms (geometric mean of rise and decay) and
gain 1 at 0.5 nA (``calibrate_dpi``, 3 iterations: rise 10.47 ms, decay 9.52 ms, gain 0.999)."""


def fmt(value: float) -> str:
    """A SPICE number with an engineering suffix (``0.35n``, ``9.2p``)."""
    if value == 0:
        return "0"
    for scale, suffix in ((1e-15, "f"), (1e-12, "p"), (1e-9, "n"), (1e-6, "u"), (1e-3, "m"), (1.0, "")):
        if abs(value) < scale * 1000:
            return f"{value / scale:.6g}{suffix}"
    return f"{value:.6g}"


def cell_library() -> str:
    """Subcircuits shared by every netlist (no device models: the deck includes those)."""
    return _primitives() + _bmru_cores() + _bmru_cells() + _bmru_pairs() + _dpi_cells()


def _primitives() -> str:
    """Bias primitives: pFET diode and copy, the cascode gate."""
    return f"""\
* ---------------------------------------------------------------------------------------------
* codesign analog cell library: sky130 {NFET} / {PFET}, W and L in um (.option scale=1.0u)
* ---------------------------------------------------------------------------------------------

* Diode-connected pFET: the bias voltage for a current pulled out of node d.
.subckt pbias d vdd
XM d d vdd vdd {PFET} {SRC}
.ends pbias

* pFET current source: copies the current of the pbias whose gate is g.
.subckt pcopy d g vdd
XM d g vdd vdd {PFET} {SRC}
.ends pcopy

* Cascode gate voltage: two stacked nFET diodes fed by a current pushed into vcn.
.subckt ncas vcn
XM1 vcn vcn m 0 {NFET} {SRC}
XM2 m m 0 0 {NFET} {SRC}
.ends ncas

"""


def _bmru_cores() -> str:
    """BMRU cores: fixed thresholds (10 T), per-step thresholds (12 T), an extra output tap."""
    return f"""\
* BMRU core (10 T). in: input current (into an nFET diode). out: I_ALPHA while the state is high.
* x: state node (low = state high). vbd / vbh / vba / vbb: gates of pbias devices carrying
* I_DOWN / I_UP - I_DOWN / I_ALPHA / I_B2. vcn: cascode gate.
.subckt bmru_core in out x vdd vbd vbh vba vbb vcn
XMn1 in in 0 0 {NFET} {SRC}
XMn2 xc in 0 0 {NFET} {SRC}
XMn4 x vcn xc 0 {NFET} {SRC}
XMp1 x vbd vdd vdd {PFET} {SRC}
XMp2 h vbh vdd vdd {PFET} {SRC}
XMp3 x y h vdd {PFET} {SW}
XMp4 y vbb vdd vdd {PFET} {SRC}
XMn3 y x 0 0 {NFET} {SW}
XMp5 o vba vdd vdd {PFET} {SRC}
XMp6 out x o vdd {PFET} {SW}
.ends bmru_core

* BMRU core for thresholds driven every step (12 T): the switched branch is I_UP (pFET copy, gate
* vbu) minus I_DOWN (cascoded nFET copy, gate vbdn: an nFET diode carrying I_DOWN).
.subckt bmru_core_dyn in out x vdd vbd vbu vbdn vba vbb vcn
XMn1 in in 0 0 {NFET} {SRC}
XMn2 xc in 0 0 {NFET} {SRC}
XMn4 x vcn xc 0 {NFET} {SRC}
XMp1 x vbd vdd vdd {PFET} {SRC}
XMp2 h vbu vdd vdd {PFET} {SRC}
XMn5 hc vbdn 0 0 {NFET} {SRC}
XMn6 h vcn hc 0 {NFET} {SRC}
XMp3 x y h vdd {PFET} {SW}
XMp4 y vbb vdd vdd {PFET} {SRC}
XMn3 y x 0 0 {NFET} {SW}
XMp5 o vba vdd vdd {PFET} {SRC}
XMp6 out x o vdd {PFET} {SW}
.ends bmru_core_dyn

* Extra copy of a BMRU output (I_ALPHA while x is low).
.subckt bmru_tap out x vdd vba
XMp5 o vba vdd vdd {PFET} {SRC}
XMp6 out x o vdd {PFET} {SW}
.ends bmru_tap

"""


def _bmru_cells() -> str:
    """The shared bias and the BMRU cells with their own bias generators."""
    return f"""\
* Bias shared by all cells of a layer: y-stage bias vbb and cascode gate vcn (drawn from vddb).
.subckt bias_shared vddb vbb vcn params: I_B2={fmt(I_B2)} I_CAS={fmt(I_CAS)}
Xb vbb vddb pbias
Ib vbb 0 DC {{I_B2}}
Xc vcn ncas
Ic vddb vcn DC {{I_CAS}}
.ends bias_shared

* BMRU cell with fixed thresholds: thresholds I_DOWN < I_UP and output level I_ALPHA are bias
* currents of its own bias generator (drawn from vddb).
.subckt bmru_cell in out vdd vddb vbb vcn params: I_DOWN=0.15n I_UP=0.35n I_ALPHA=0.5n
XbD vbd vddb pbias
IbD vbd 0 DC {{I_DOWN}}
XbH vbh vddb pbias
IbH vbh 0 DC {{I_UP-I_DOWN}}
XbA vba vddb pbias
IbA vba 0 DC {{I_ALPHA}}
Xcore in out x vdd vbd vbh vba vbb vcn bmru_core
.ends bmru_cell

* BMRU cell with input-dependent thresholds: the caller pulls I_DOWN(t) out of vbd and I_UP(t)
* out of vbu every step (a threshold DAC); I_ALPHA stays a bias.
.subckt bmru_cell_dyn in out vdd vddb vbb vcn vbd vbu params: I_ALPHA=0.5n
XbD vbd vddb pbias
XbU vbu vddb pbias
XcD vbdn vbd vddb pcopy
XnD vbdn vbdn 0 0 {NFET} {SRC}
XbA vba vddb pbias
IbA vba 0 DC {{I_ALPHA}}
Xcore in out x vdd vbd vbu vbdn vba vbb vcn bmru_core_dyn
.ends bmru_cell_dyn

"""


def _bmru_pairs() -> str:
    """The complementary pair (the golden 0 start state) and its input-less cores."""
    return f"""\
* BMRU cores without their input diode (gate gin: the diode lives in the caller, so that two
* cores can copy one input current): used by the complementary pair below.
.subckt bmru_core_g gin out x vdd vbd vbh vba vbb vcn
XMn2 xc gin 0 0 {NFET} {SRC}
XMn4 x vcn xc 0 {NFET} {SRC}
XMp1 x vbd vdd vdd {PFET} {SRC}
XMp2 h vbh vdd vdd {PFET} {SRC}
XMp3 x y h vdd {PFET} {SW}
XMp4 y vbb vdd vdd {PFET} {SRC}
XMn3 y x 0 0 {NFET} {SW}
XMp5 o vba vdd vdd {PFET} {SRC}
XMp6 out x o vdd {PFET} {SW}
.ends bmru_core_g

.subckt bmru_core_dyn_g gin out x vdd vbd vbu vbdn vba vbb vcn
XMn2 xc gin 0 0 {NFET} {SRC}
XMn4 x vcn xc 0 {NFET} {SRC}
XMp1 x vbd vdd vdd {PFET} {SRC}
XMp2 h vbu vdd vdd {PFET} {SRC}
XMn5 hc vbdn 0 0 {NFET} {SRC}
XMn6 h vcn hc 0 {NFET} {SRC}
XMp3 x y h vdd {PFET} {SW}
XMp4 y vbb vdd vdd {PFET} {SRC}
XMn3 y x 0 0 {NFET} {SW}
XMp5 o vba vdd vdd {PFET} {SRC}
XMp6 out x o vdd {PFET} {SW}
.ends bmru_core_dyn_g

* Complementary pair (the golden model's 0 start state): two cores copy the same input and share
* the bias generator; the reset (rst high, rstb low) puts core a low (xa high) and core b high
* (xb low). They agree after the neuron's first update; until then qa + qb = 1, so
* h = alpha (qa + qb - 1) is 0 exactly as the integer model's state before its first update.
* out carries (qa + qb) I_ALPHA.
.subckt bmru_pair in out vdd vddb vbb vcn rst rstb params: I_DOWN=0.15n I_UP=0.35n I_ALPHA=0.5n
XbD vbd vddb pbias
IbD vbd 0 DC {{I_DOWN}}
XbH vbh vddb pbias
IbH vbh 0 DC {{I_UP-I_DOWN}}
XbA vba vddb pbias
IbA vba 0 DC {{I_ALPHA}}
XMn1 in in 0 0 {NFET} {SRC}
Xa in out xa vdd vbd vbh vba vbb vcn bmru_core_g
Xb in out xb vdd vbd vbh vba vbb vcn bmru_core_g
XMra xa rstb vdd vdd {PFET} {SW}
XMrb xb rst 0 0 {NFET} {SW}
.ends bmru_pair

.subckt bmru_pair_dyn in out vdd vddb vbb vcn vbd vbu rst rstb params: I_ALPHA=0.5n
XbD vbd vddb pbias
XbU vbu vddb pbias
XcD vbdn vbd vddb pcopy
XnD vbdn vbdn 0 0 {NFET} {SRC}
XbA vba vddb pbias
IbA vba 0 DC {{I_ALPHA}}
XMn1 in in 0 0 {NFET} {SRC}
Xa in out xa vdd vbd vbu vbdn vba vbb vcn bmru_core_dyn_g
Xb in out xb vdd vbd vbu vbdn vba vbb vcn bmru_core_dyn_g
XMra xa rstb vdd vdd {PFET} {SW}
XMrb xb rst 0 0 {NFET} {SW}
.ends bmru_pair_dyn

"""


def _dpi_cells() -> str:
    """The DPI low-pass filters: the first one and the kappa-matched dpi_n."""
    return f"""\
* DPI low-pass (8 T + C). in: input current (into an nFET diode); out1, out2: two copies of the
* output (pFET sources). vbtau / vbth: gates of pbias devices carrying I_TAU / I_TH.
.subckt dpi in out1 out2 vdd vbtau vbth params: C=2p
XMd in in 0 0 {NFET} {SRC}
XMt vs in 0 0 {NFET} {SRC}
XMa vc vc vs 0 {NFET} {SRC}
XMb vdd vbth vs 0 {NFET} {SRC}
XMtau vc vbtau vdd vdd {PFET} {SRC}
C1 vdd vc {{C}}
XMo1 out1 vc vdd vdd {PFET} {SRC}
XMo2 out2 vc vdd vdd {PFET} {SRC}
.ends dpi

* DPI with its own bias generator (for characterisation).
.subckt dpi_cell in out1 out2 vdd vddb params: C=2p I_TAU=9.2p I_TH=19.1p
Xbt vbtau vddb pbias
Ibt vbtau 0 DC {{I_TAU}}
Xbh vbth vddb pbias
Ibh vbth 0 DC {{I_TH}}
Xd in out1 out2 vdd vbtau vbth dpi C={{C}}
.ends dpi_cell

* kappa-matched DPI (12 T + C): the capacitor node vc (to ground) drives the nFET output, so the
* integrating pair and the output share one kappa (nFET): I_out = (I_TH / I_TAU) I_in low-passed
* with tau = C U_T / (kappa_n I_TAU), rise and fall alike. The pair's threshold branch (gate
* vbth) is mirrored into vc (it carries I_in exp(kappa_n (vbth - vc) / U_T), the term that makes
* the node equation linear in exp(kappa_n vc / U_T)), I_TAU is sunk from vc, and the output is
* turned into two sourced copies by a pFET mirror. vbtau / vbth: gates of nFET diodes carrying
* I_TAU / I_TH, so both references track the pair's corner. The pair is wide (W/L 80 x that of
* the 4/8 sources) so that its common source keeps the tail saturated with gates near the
* diodes' low voltages; its size does not enter the gain (only vc - vbth does).
.subckt dpi_n in out1 out2 vdd vbtau vbth params: C=2p
XMd in in 0 0 {NFET} {SRC}
XMt vs in 0 0 {NFET} {SRC}
XMa vdd vc vs 0 {NFET} {PAIR}
XMb pb vbth vs 0 {NFET} {PAIR}
XMpb pb pb vdd vdd {PFET} {SRC}
XMpc vc pb vdd vdd {PFET} {SRC}
XMtau vc vbtau 0 0 {NFET} {SRC}
C1 vc 0 {{C}}
XMo pd vc 0 0 {NFET} {SRC}
XMpd pd pd vdd vdd {PFET} {SRC}
XMo1 out1 pd vdd vdd {PFET} {SRC}
XMo2 out2 pd vdd vdd {PFET} {SRC}
.ends dpi_n

* kappa-matched DPI with its own bias generator (nFET diodes fed from vddb).
.subckt dpi_n_cell in out1 out2 vdd vddb params: C=2p I_TAU=8.9p I_TH=8.9p
XMbt vbtau vbtau 0 0 {NFET} {SRC}
Ibt vddb vbtau DC {{I_TAU}}
XMbh vbth vbth 0 0 {NFET} {SRC}
Ibh vddb vbth DC {{I_TH}}
Xd in out1 out2 vdd vbtau vbth dpi_n C={{C}}
.ends dpi_n_cell
"""


def cmru_ladder(
    stages: int, dpi: DpiParams = DpiParams(), name: str | None = None, *, dynamic: bool = False
) -> str:
    """Subcircuit ``cmru_native_<stages>`` (ports ``in out vdd vddb``): the native CMRU circuit.

    With ``dynamic`` the stage thresholds are driven from outside (ports ``vbd1 vbu1 vbd2 vbu2``:
    pull ``I_down(t)``, ``I_up(t)``, ``I_down(t) + I_SHIFT``, ``I_up(t) + I_SHIFT`` out of them).
    ``I_SHIFT``: the window shift of stages >= 2, one state unit as their threshold sources copy it
    (:func:`codesign.analog.mapping.ladder_shift`; 0.5 nA by default, the untrimmed ``I_ALPHA``).
    ``dpi``: the DPI between the stages and its settings; ``kind="n"`` (:data:`DPI_N`) puts the
    kappa-matched ``dpi_n`` there, biased from nFET diodes, and names the subcircuit ``..._n``.
    """
    if stages < 1:
        raise ValueError("a CMRU ladder needs at least one stage")
    name = name or f"cmru_native_{stages}" + ("_dyn" if dynamic else "") + ("_n" if dpi.kind == "n" else "")
    ports = "in out vdd vddb" + (" vbd1 vbu1 vbd2 vbu2" if dynamic else "")
    thr = "" if dynamic else "I_DOWN=0.15n I_UP=0.35n I_SHIFT=0.5n "
    lines = [
        f"* Native CMRU, {stages} stages: BMRU stages interleaved with DPI blocks (CMRU App. E).",
        "* in: input current (into an nFET diode), copied to every stage; out: sum of the stage outputs.",
        "* Stage k input = I_in + D(k-1) + D(k+1); stage 1 window [I_DOWN, I_UP], stages >= 2 shifted by I_ALPHA.",
        f".subckt {name} {ports} params: {thr}I_ALPHA=0.5n "
        f"I_TAU={fmt(dpi.i_tau)} I_TH={fmt(dpi.i_th)} C={fmt(dpi.c)} I_B2={fmt(I_B2)} I_CAS={fmt(I_CAS)} "
        f"I_FLOOR={fmt(I_FLOOR)}",
        "* bias generator (vddb)",
        "Xbias vddb vbb vcn bias_shared I_B2={I_B2} I_CAS={I_CAS}",
    ]
    if dynamic:
        lines += [
            "Xb1 vbd1 vddb pbias",
            "Xb2 vbu1 vddb pbias",
            "Xb3 vbd2 vddb pbias",
            "Xb4 vbu2 vddb pbias",
            "Xc1 vbdn1 vbd1 vddb pcopy",
            f"Xn1 vbdn1 vbdn1 0 0 {NFET} {SRC}",
            "Xc2 vbdn2 vbd2 vddb pcopy",
            f"Xn2 vbdn2 vbdn2 0 0 {NFET} {SRC}",
        ]
    else:
        lines += [
            "Xb1 vbd1 vddb pbias",
            "Ib1 vbd1 0 DC {I_DOWN}",
            "Xb2 vbd2 vddb pbias",
            "Ib2 vbd2 0 DC {I_DOWN+I_SHIFT}",
            "Xb3 vbh vddb pbias",
            "Ib3 vbh 0 DC {I_UP-I_DOWN}",
        ]
    lines += ["Xb5 vba vddb pbias", "Ib5 vba 0 DC {I_ALPHA}"]
    if dpi.kind == "n":  # the kappa-matched DPI takes its references from nFET diodes
        lines += [
            f"XMb6 vbtau vbtau 0 0 {NFET} {SRC}",
            "Ib6 vddb vbtau DC {I_TAU}",
            f"XMb7 vbth vbth 0 0 {NFET} {SRC}",
            "Ib7 vddb vbth DC {I_TH}",
        ]
    else:
        lines += [
            "Xb6 vbtau vddb pbias",
            "Ib6 vbtau 0 DC {I_TAU}",
            "Xb7 vbth vddb pbias",
            "Ib7 vbth 0 DC {I_TH}",
        ]
    lines += [
        "Xb8 vbfl vddb pbias",
        "Ib8 vbfl 0 DC {I_FLOOR}",
        "* input distribution: nFET diode -> cascoded nFET copy -> pFET diode -> one pFET copy per stage",
        f"XMi1 in in 0 0 {NFET} {SRC}",
        f"XMi2 pinc in 0 0 {NFET} {SRC}",
        f"XMi3 pin vcn pinc 0 {NFET} {SRC}",
        "Xpin pin vdd pbias",
    ]
    for k in range(1, stages + 1):
        j = 1 if k == 1 else 2
        if dynamic:
            core = f"vbd{j} vbu{j} vbdn{j} vba vbb vcn bmru_core_dyn"
        else:
            core = f"vbd{j} vbh vba vbb vcn bmru_core"
        down = f"s{k - 1}" if k > 1 else "vdd"
        up = f"s{k + 1}" if k < stages else "vdd"
        lines += [
            f"* stage {k}",
            f"Xin{k} s{k} pin vdd pcopy",
            f"Xs{k} s{k} out x{k} vdd {core}",
            f"Xt{k} d{k} x{k} vdd vba bmru_tap",
            f"Xf{k} d{k} vbfl vdd pcopy",
            f"Xd{k} d{k} {down} {up} vdd vbtau vbth {'dpi_n' if dpi.kind == 'n' else 'dpi'} C={{C}}",
        ]
    lines.append(f".ends {name}")
    return "\n".join(lines) + "\n"


def deck_header(
    title: str,
    *,
    corner: str = "tt",
    mc_seed: int | None = None,
    temp: float = 27.0,
    models: str | None = None,
    reltol: float | None = None,
    options: dict[str, str] | None = None,
) -> str:
    """Title, options, device models (``models`` text or :func:`codesign.analog.pdk.model_block`).

    ``reltol``: replaces the relative tolerance of :data:`codesign.analog.ngspice.TIGHT_OPTIONS`
    (1e-4); the absolute ones (pA currents) stay. ``options``: solver options that replace those of
    the same name in that line or are added to it (``{"method": "trap", "bypass": "1"}``)."""
    from codesign.analog.ngspice import TIGHT_OPTIONS
    from codesign.analog.pdk import model_block

    mc = 1 if mc_seed is not None else 0
    options_line = (
        TIGHT_OPTIONS if reltol is None else TIGHT_OPTIONS.replace("reltol=1e-4", f"reltol={reltol:g}")
    )
    if options:
        pairs = dict(item.split("=", 1) for item in options_line.split()[1:])
        pairs.update(options)
        options_line = ".option " + " ".join(f"{k}={v}" for k, v in pairs.items())
    lines = [f"* {title}", ".option scale=1.0u", options_line, f".option temp={temp:g}"]
    if mc_seed is not None:
        lines.append(f".option seed={int(mc_seed)}")
    lines.append(models if models is not None else model_block(corner))
    lines.append(f".param mc_mm_switch={mc} mc_pr_switch=0")
    return "\n".join(lines) + "\n"


def supplies(vdd: float = VDD) -> str:
    """Core, bias-generator and input supplies (separate, so their powers can be told apart)."""
    return f"Vdd vdd 0 {vdd:g}\nVddb vddb 0 {vdd:g}\nVsrc vsrc 0 {vdd:g}\n"


def pwl(
    times: list[float] | tuple[float, ...], values: list[float] | tuple[float, ...], per_line: int = 6
) -> str:
    """A ``PWL(...)`` specification wrapped over continuation lines."""
    pairs = [f"{t:.9g} {fmt(v)}" for t, v in zip(times, values, strict=True)]
    chunks = [" ".join(pairs[i : i + per_line]) for i in range(0, len(pairs), per_line)]
    return "PWL(" + "\n+ ".join(chunks) + ")"
