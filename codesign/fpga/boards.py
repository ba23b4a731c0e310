"""Boards ``codesign synth --board`` targets: a device in a package, the board's pins, its
oscillator, and a PLL from it to the design clock.

==============  =====================  ==========  ==========  ======================================
board           part / package         oscillator  clock pin   UART (FPGA receive / transmit)
==============  =====================  ==========  ==========  ======================================
icebreaker      iCE40UP5K-SG48         12 MHz      35          FTDI channel B: 6 / 9
upduino3        iCE40UP5K-SG48         12 MHz      35 (OSC     header gpio_23 / gpio_25 (a USB-UART
                                                   jumper)     adapter; the FT232H serves the flash)
ulx3s-85f       LFE5U-85F-6BG381C      25 MHz      G2          FT231X: M1 / L4
orangecrab-25f  LFE5U-25F-8MG285C      48 MHz      A9          Feather pins 0 (N17) / 1 (M18), an
                                                               adapter (the board has USB only)
==============  =====================  ==========  ==========  ======================================

Pin files live in ``flows/fpga/boards/``. The design runs at the timing target (``--freq``,
default the device's), made by the PLL from the oscillator; a target equal to the oscillator
needs no PLL. The UART's divisor follows the clock the PLL really makes.
"""

from __future__ import annotations

__all__ = ["BOARDS", "BoardSpec", "board_device", "get_board"]

import dataclasses
from dataclasses import dataclass

from codesign.errors import CodesignError
from codesign.fpga.devices import Device, get_device


@dataclass(frozen=True)
class BoardSpec:
    name: str
    title: str
    device: str  # a codesign.fpga.devices name
    part: str
    package_args: tuple[str, ...]  # nextpnr's device and package arguments
    constraints: str  # file in flows/fpga/boards/
    clock_hz: float
    flash: tuple[str, ...]  # programmer command lines, {bitstream} filled in; first found on PATH wins


BOARDS: dict[str, BoardSpec] = {
    b.name: b
    for b in (
        BoardSpec(
            "icebreaker",
            "iCEBreaker",
            "up5k",
            "iCE40UP5K-SG48",
            ("--up5k", "--package", "sg48"),
            "icebreaker.pcf",
            12e6,
            ("openFPGALoader -b ice40_generic {bitstream}", "iceprog {bitstream}"),
        ),
        BoardSpec(
            "upduino3",
            "UPduino v3",
            "up5k",
            "iCE40UP5K-SG48",
            ("--up5k", "--package", "sg48"),
            "upduino3.pcf",
            12e6,
            ("openFPGALoader -b ice40_generic {bitstream}", "iceprog {bitstream}"),
        ),
        BoardSpec(
            "ulx3s-85f",
            "ULX3S 85F",
            "ecp5-85k",
            "LFE5U-85F-6BG381C",
            ("--85k", "--package", "CABGA381", "--speed", "6"),
            "ulx3s-85f.lpf",
            25e6,
            ("openFPGALoader -b ulx3s {bitstream}",),
        ),
        BoardSpec(
            "orangecrab-25f",
            "OrangeCrab r0.2 25F",
            "ecp5-25k",
            "LFE5U-25F-8MG285C",
            ("--25k", "--package", "CSFBGA285", "--speed", "8"),
            "orangecrab-25f.lpf",
            48e6,
            ("openFPGALoader -b orangeCrab {bitstream}",),
        ),
    )
}


def get_board(name: str) -> BoardSpec:
    try:
        return BOARDS[name]
    except KeyError:
        raise CodesignError(f"--board {name!r} is not one of {', '.join(BOARDS)}") from None


def board_device(board: BoardSpec) -> Device:
    """The board's device: its package, its pins (``boards/<file>``) and its oscillator."""
    device = get_device(board.device)
    return dataclasses.replace(
        device,
        part=board.part,
        nextpnr_args=board.package_args,
        constraints=f"boards/{board.constraints}",
        board=board.title,
        board_clock_hz=board.clock_hz,
    )
