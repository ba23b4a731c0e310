"""What the testbench's parts see of the bench: the protocols drivers, monitors and the golden model use.

The parts (:mod:`tb_drivers`, :mod:`tb_monitors`, :mod:`tb_golden`) are built by
:class:`tb_bench.Testbench` and call back into it. Typing those callbacks against the protocols
here, not against ``Testbench`` itself, keeps the imports one way: ``tb_bench`` imports its parts,
no part imports ``tb_bench``.
"""

from __future__ import annotations

from typing import Any, Protocol

from tb_scoreboard import InOrderChecker, Scoreboard

__all__ = ["Bench", "ComponentList"]


class ComponentList(Protocol):
    """The clock loop as a component sees it: the list it registers itself in."""

    components: list[Any]


class Bench(Protocol):
    """The bench as its parts see it: the DUT, the loop, the scoreboard and the coverage hooks."""

    dut: Any
    loop: ComponentList
    errors: list[str]
    progress: int
    lanes: int
    plan_options: dict[str, Any]
    input_size: int
    scoreboard: Scoreboard
    trace_checkers: dict[str, InOrderChecker]
    result_checker: InOrderChecker

    def sample(self, point: str, value: str) -> None:
        """Sample a coverage point (``tb_coverage``) with ``value``."""

    def sample_stall(self, what: str) -> None:
        """Sample the stall coverage point once per kind of stall ``what``."""
