"""Recurrent cells, scans and networks (PyTorch, batch first)."""

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU
from codesign.nn.dcls import DCLS1d, param_groups
from codesign.nn.hardware import HW_CELLS, BinaryGatedMinGRU, HardSigmoidMinGRU, HardwareHSRU, HardwareStack
from codesign.nn.hsru import HSRU
from codesign.nn.lru import LRU
from codesign.nn.mgrade import MGRADELayer
from codesign.nn.mingru import MinGRU
from codesign.nn.registry import CELL_TYPES, build_cell
from codesign.nn.scan import cumulative_scan, last_update_scan, linear_scan, sequential_scan, xor_scan
from codesign.nn.surnn import RhythmicGate, SelectiveUpdateGRU, SelectiveUpdateMinGRU
from codesign.nn.surrogate import heaviside, sign

__all__ = [
    "BMRU",
    "CMRU",
    "AlphaCMRU",
    "heaviside",
    "linear_scan",
    "sequential_scan",
    "sign",
    "DCLS1d",
    "HSRU",
    "LRU",
    "MGRADELayer",
    "MinGRU",
    "RhythmicGate",
    "SelectiveUpdateGRU",
    "SelectiveUpdateMinGRU",
    "cumulative_scan",
    "last_update_scan",
    "param_groups",
    "xor_scan",
    "CELL_TYPES",
    "build_cell",
    "HW_CELLS",
    "BinaryGatedMinGRU",
    "HardSigmoidMinGRU",
    "HardwareHSRU",
    "HardwareStack",
]
