"""The FPGA devices ``codesign synth`` targets, with the board whose pins ``flows/fpga/`` constrains.

=========  ===============================  =====================  ==========  ===================
device     part / package                   board (pins)           board clock constraint file
=========  ===============================  =====================  ==========  ===================
up5k       iCE40 UltraPlus UP5K, SG48        iCEBreaker              12 MHz    flows/fpga/up5k.pcf
hx8k       iCE40 HX8K, CT256                iCE40-HX8K breakout     12 MHz    flows/fpga/hx8k.pcf
ecp5-25k   ECP5 LFE5U-25F, CABGA381         ULX3S (25F)             25 MHz    flows/fpga/ecp5.lpf
ecp5-85k   ECP5 LFE5U-85F, CABGA381         ULX3S (85F)             25 MHz    flows/fpga/ecp5.lpf
=========  ===============================  =====================  ==========  ===================

The board clock only sets the UART's baud divisor; the timing target handed to nextpnr
(``--freq``, default :attr:`Device.target_mhz`) is what the Fmax is checked against. A design
run faster than its board clock needs a PLL in front: ``codesign synth --board``
(:mod:`codesign.fpga.boards`) makes one, with the board's own pins.
"""

from __future__ import annotations

__all__ = ["DEVICES", "Device", "constraints_dir", "get_device"]

from dataclasses import dataclass
from pathlib import Path

from codesign.errors import CodesignError


@dataclass(frozen=True)
class Device:
    name: str
    family: str  # "ice40" or "ecp5"
    part: str
    nextpnr_args: tuple[str, ...]
    constraints: str  # file name in flows/fpga/
    board: str
    board_clock_hz: float
    target_mhz: float  # the Fmax target for this device

    @property
    def nextpnr(self) -> str:
        return f"nextpnr-{self.family}"

    @property
    def packer(self) -> str:
        return "icepack" if self.family == "ice40" else "ecppack"

    @property
    def bitstream(self) -> str:
        return "top.bin" if self.family == "ice40" else "top.bit"


DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device(
            "up5k",
            "ice40",
            "iCE40UP5K-SG48",
            ("--up5k", "--package", "sg48"),
            "up5k.pcf",
            "iCEBreaker",
            12e6,
            30.0,
        ),
        Device(
            "hx8k",
            "ice40",
            "iCE40HX8K-CT256",
            ("--hx8k", "--package", "ct256"),
            "hx8k.pcf",
            "iCE40-HX8K breakout",
            12e6,
            30.0,
        ),
        Device(
            "ecp5-25k",
            "ecp5",
            "LFE5U-25F-6BG381C",
            ("--25k", "--package", "CABGA381", "--speed", "6"),
            "ecp5.lpf",
            "ULX3S",
            25e6,
            80.0,
        ),
        Device(
            "ecp5-85k",
            "ecp5",
            "LFE5U-85F-6BG381C",
            ("--85k", "--package", "CABGA381", "--speed", "6"),
            "ecp5.lpf",
            "ULX3S",
            25e6,
            80.0,
        ),
    )
}


def get_device(name: str) -> Device:
    try:
        return DEVICES[name]
    except KeyError:
        raise CodesignError(f"--device {name!r} is not one of {', '.join(DEVICES)}") from None


def constraints_dir() -> Path:
    """``flows/fpga`` of the checkout (the package lives in ``codesign/fpga`` beside ``flows/``)."""
    return Path(__file__).resolve().parents[2] / "flows" / "fpga"
