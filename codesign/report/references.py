"""Published figures of comparable event-driven / always-on inference chips (reference lines only).

They are *other* chips, processes and tasks: a sense of scale, not a like-for-like comparison.
"""

from __future__ import annotations

__all__ = ["BMRU_KWS", "REFERENCES"]

BMRU_KWS = {
    "chip": "BMRU analog keyword spotter (Schmitt-trigger memory cells, subthreshold CMOS)",
    "figure": "> 90 % keyword-spotting accuracy at 100 nW",
    "energy_per_inference_uj": None,
    "power_uw": 0.1,
    "energy_per_sop_pj": None,
    "source": "Fyon et al., 2026a, b, as cited by 'Improving the performance and learning stability of "
    "parallelizable RNNs for ultra-low-power applications' (the CMRU paper): 'a recent design achieves >90% "
    "accuracy at 100 nW for keyword spotting'",
}
"""The analog figure this project's analog path is measured against: the circuit family its BMRU
and CMRU cells come from. ``codesign report`` puts it in the side-by-side table at its published
power, charged over the report's own inference duration."""

REFERENCES = [
    BMRU_KWS,
    {
        "chip": "SynSense Xylo Audio (Xylo-A2)",
        "figure": "6.6 uJ per inference at 291 uW (keyword spotting, audio front end included)",
        "energy_per_inference_uj": 6.6,
        "power_uw": 291.0,
        "energy_per_sop_pj": None,
        "source": "Bos, Muir et al., 'Sub-mW Neuromorphic SNN audio processing applications with Rockpool "
        "and Xylo', arXiv:2208.12991 (2022)",
    },
    {
        "chip": "ReckOn (28 nm)",
        "figure": "5.3 pJ per synaptic operation",
        "energy_per_inference_uj": None,
        "power_uw": None,
        "energy_per_sop_pj": 5.3,
        "source": "Frenkel, Indiveri, 'ReckOn: A 28nm sub-mm2 task-agnostic spiking recurrent neural network "
        "processor enabling on-chip learning over second-long timescales', ISSCC 2022",
    },
    {
        "chip": "ODIN (28 nm FDSOI)",
        "figure": "12.7 pJ per synaptic operation",
        "energy_per_inference_uj": None,
        "power_uw": None,
        "energy_per_sop_pj": 12.7,
        "source": "Frenkel, Lefebvre, Legat, Bol, 'A 0.086-mm2 12.7-pJ/SOP 64k-synapse 256-neuron online-learning "
        "digital spiking neuromorphic processor in 28-nm CMOS', IEEE TBioCAS 13(1), 2019",
    },
]
