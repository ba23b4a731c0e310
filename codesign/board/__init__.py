"""The board loop: a host driver for the UART bitstream of ``codesign synth``, a simulated board
on a pseudo-terminal, and ``codesign board`` (see docs/board.md)."""
