"""The options of ``codesign analog-eval``: their ranges (one :class:`CodesignError` naming the
option) and the settings they put into every sequence's cache key.

An option at its default stays out of the key, so caches made before the option existed keep
their keys.
"""

from __future__ import annotations

from codesign.errors import CodesignError

__all__ = ["LADDER_CIRCUIT", "any_ladder_option", "cell_settings", "check_options", "ladder_settings"]

LADDER_CIRCUIT = 2
"""Part of the cache key of native CMRU (eps 1) sequences only (BMRU caches stay valid): bump it
when the ladder circuit or its drive changes (2: the window shift of stages >= 2 calibrated,
:data:`codesign.analog.mapping.LADDER_SHIFT_GAIN`)."""


def check_options(
    sequences, start, mc, mc_spice, mc_sequences, synapses, synapse_trim, scale, reltol
) -> None:
    """Refuse an option outside its range (one :class:`CodesignError` naming it)."""
    if sequences < 1:
        raise CodesignError(f"--sequences must be at least 1, not {sequences}")
    if start not in ("pair", "single"):
        raise CodesignError(f"--start must be pair or single, not {start!r}")
    if mc < 0 or mc_spice < 0 or mc_spice > max(mc, 0) or mc_sequences < 1:
        raise CodesignError(
            f"--mc {mc} / --mc-spice {mc_spice} / --mc-sequences {mc_sequences}: need 0 <= mc-spice <= mc"
        )
    if synapses not in ("ideal", "circuit"):
        raise CodesignError(f"--synapses must be ideal or circuit, not {synapses!r}")
    if synapse_trim not in ("offset", "none"):
        raise CodesignError(f"--synapse-trim must be offset or none, not {synapse_trim!r}")
    if scale not in ("step", "neuron"):
        raise CodesignError(f"--scale must be step or neuron, not {scale!r}")
    if not 1e-6 <= reltol <= 1e-2:
        raise CodesignError(f"--reltol must be between 1e-6 and 1e-2, not {reltol:g}")


def any_ladder_option(
    *, tmax_ms, ladder_dpi, ladder_pulse_ms, ladder_deck, ladder_trim_pa, ladder_overdrive_pa, **_
):
    """Whether a ladder-only option differs from its default."""
    return bool(
        tmax_ms != 1.0
        or ladder_dpi != "p"
        or ladder_pulse_ms != 4.0
        or ladder_deck != "reference"
        or tuple(ladder_trim_pa) != (0.0, 0.0)
        or ladder_overdrive_pa
    )


def ladder_settings(
    *,
    ladder_spare,
    ladder_group,
    ladder_init,
    tmax_ms,
    ladder_pulse_ms,
    ladder_dpi,
    ladder_deck,
    ladder_trim_pa,
    ladder_overdrive_pa,
) -> dict:
    """The cache-key settings of a native CMRU run; an option at its default stays out of the key
    (the older caches keep their keys).

    ``ladder_dpi``: the DPI between a ladder's stages: ``p`` the first one, ``n`` the kappa-matched
    ``dpi_n`` (tau within 6.8 % at every corner) with its own calibrated window shift.

    ``ladder_pulse_ms``: how long each step's candidate pulse lasts (4 ms by default). A stage switches
    in ``C dV / overdrive``, about 4.6 ms for a reset 5 pA beyond its threshold, so a 4 ms pulse
    misses updates within a few pA; 8 ms resolved the JapaneseVowels misses at 2.4 and 4.7 pA and
    still adds exactly one alpha per update (the next stage follows only after ~13 ms).

    ``ladder_trim_pa``: ``(up, down)`` pA by which every step's window narrows during its pulse
    (:func:`codesign.analog.drive.ladder_drive`: a calibration of the overdrive a stage needs to
    switch within the pulse).

    ``ladder_overdrive_pa``: the candidate clipped to at most this far past its step's window
    (:func:`codesign.analog.drive.ladder_drive`; 0: its own clip, up to 100 pA past with per-step
    windows). At the full clip the next stage can follow within the pulse and add a second alpha
    for one update (JapaneseVowels sequence 61, neuron 0, step 16); 20 pA switches a stage in
    about 1 ms and leaves the near ties, a few pA past, as they were.

    ``ladder_deck``: how ngspice simulates the ladders (:mod:`codesign.analog.ladder_deck`):
    ``reference`` (the deck of every earlier run) or ``fast`` (trapezoidal integration, looser
    truncation and absolute-current tolerances, device bypass, 1 ms drive ramps, only the read
    vectors saved; the same circuit in 1.3-1.7x fewer Newton iterations, but not the same counts:
    it resolved near ties and a clipped candidate's pulse differently on 1 of 3 JapaneseVowels
    sequences, so it is for quick looks, not for figures compared with the reference).

    ``tmax_ms``: ngspice's largest time step in the ladders' transient (1 ms by default; the ladder
    rests between steps, and 5 ms with ``reltol`` 1e-3 gave the same counts about 6x faster).
    """
    from codesign.analog.ladder_deck import LADDER_DECKS

    settings = {
        "ladder_spare": int(ladder_spare),
        "ladder_group": int(ladder_group),
        "ladder_init": ladder_init,
        "ladder_circuit": LADDER_CIRCUIT,
    }
    if not 0.1 <= tmax_ms <= 20.0:
        raise CodesignError(f"--tmax-ms must be between 0.1 and 20 ms, not {tmax_ms:g}")
    if not 1.0 <= ladder_pulse_ms <= 10.0:
        raise CodesignError(
            f"--ladder-pulse-ms must be between 1 and 10 ms (a longer pulse lets the next stage follow), "
            f"not {ladder_pulse_ms:g}"
        )
    if ladder_pulse_ms != 4.0:
        settings["ladder_pulse_ms"] = float(ladder_pulse_ms)
    if ladder_dpi not in ("p", "n"):
        raise CodesignError(f"--ladder-dpi must be p or n, not {ladder_dpi!r}")
    if ladder_dpi != "p":
        settings["ladder_dpi"] = ladder_dpi
    if tmax_ms != 1.0:
        settings["tmax_ms"] = float(tmax_ms)
    if ladder_deck not in LADDER_DECKS:
        raise CodesignError(f"--ladder-deck must be one of {', '.join(LADDER_DECKS)}, not {ladder_deck!r}")
    if ladder_deck != "reference":
        settings["ladder_deck"] = ladder_deck
    trim = tuple(float(v) for v in ladder_trim_pa)
    if len(trim) != 2 or not all(0.0 <= v <= 50.0 for v in trim):
        raise CodesignError(
            f"--ladder-trim-pa must be two currents UP,DOWN in 0..50 pA, not {ladder_trim_pa}"
        )
    if trim != (0.0, 0.0):
        settings["ladder_trim_pa"] = list(trim)
    if not 0.0 <= ladder_overdrive_pa <= 100.0:
        raise CodesignError(
            f"--ladder-overdrive-pa must be between 0 (off) and 100 pA, not {ladder_overdrive_pa:g}"
        )
    if ladder_overdrive_pa:
        settings["ladder_overdrive_pa"] = float(ladder_overdrive_pa)
    return settings


def cell_settings(scale, reltol, synapses, synapse_ix_fa, synapse_trim) -> dict:
    """The cache-key settings of the candidate scale, the tolerance and the synapses; the
    pre-option cache keys stay valid for the defaults they were made with.

    ``scale``: ``step`` normalises every step's window (:attr:`codesign.analog.mapping.NeuronMap.normalised`:
    margins ``H ||c| - |b|| / |b|``); ``neuron`` gives each neuron one scale from the largest ``|b|``
    of the test set. ``reltol``: ngspice's relative tolerance. ``synapses``: ``ideal`` drives the
    cells with the exact integer sums; ``circuit`` with the sums of the bundle's synapse arrays
    simulated in ngspice (:mod:`codesign.analog.synapse_sim`; with ``mc_seed`` their devices are
    mismatched too), and adds their supply power. ``synapse_ix_fa``: the arrays' current per input
    LSB and weight unit (fA): each unit mirror conducts about 0.09-0.12 pA with no input (sky130
    tt, 2/4 um), which at 100 fA shifted every product by ~0.9 of its weight; at 1 pA by ~0.09.
    ``synapse_trim``: ``offset`` (default) folds every sum line's zero-input sum into its bias DAC
    code, a one-time per-chip calibration (:func:`codesign.analog.synapse_sim.line_offsets`);
    ``none`` drives the cells with the untrimmed sums.

    ``mc``: mismatch draws of the behavioural model (:mod:`codesign.analog.behavioural`) over the
    whole test set; ``mc_spice`` of them (seeds 1..) also run in ngspice with the sky130 mismatch
    terms on, on the first ``mc_sequences`` sequences, to check the model's spread.
    """
    settings: dict = {}
    if scale != "neuron":
        settings["scale"] = scale
    if reltol != 1e-4:
        settings["reltol"] = float(reltol)
    if synapses != "ideal":
        if not 10.0 <= synapse_ix_fa <= 1e5:
            raise CodesignError(f"--synapse-ix-fa must be between 10 and 1e5 fA, not {synapse_ix_fa:g}")
        settings["synapses"] = synapses
        settings["synapse_ix_fa"] = float(synapse_ix_fa)
        if synapse_trim != "none":  # untrimmed runs keep their earlier cache keys
            settings["synapse_trim"] = synapse_trim
    return settings
