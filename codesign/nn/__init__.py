"""Recurrent cells, scans and networks (PyTorch, batch first)."""

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU
from codesign.nn.net import HardwareNet
from codesign.nn.scan import linear_scan, sequential_scan
from codesign.nn.surrogate import heaviside, sign

__all__ = ["BMRU", "CMRU", "AlphaCMRU", "HardwareNet", "heaviside", "linear_scan", "sequential_scan", "sign"]
