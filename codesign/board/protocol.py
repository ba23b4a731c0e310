"""The host's side of the board protocol: what bytes carry a sequence, a weight load, a result.

A build directory's ``build.json`` says everything the host needs: the streams and their channel
numbers (:func:`codesign.fpga.ports.port_map`), the bit fields of each payload
(``inputs_payload``, ``config_payload``, ``results_payload``, ``counters_fields``), the plan
options that give the configuration beats, and the identity word the bitstream answers with
(:func:`codesign.fpga.ports.build_identity`). Sequences become the same ``inputs`` beats the
testbenches drive (:func:`codesign.hw.pysim.item_beats`); weights the same configuration beats
(:func:`codesign.hw.images.config_beats`).
"""

from __future__ import annotations

__all__ = ["BoardProtocol", "Fields", "Result", "plan_options"]

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.board.fields import Fields
from codesign.errors import CodesignError
from codesign.fpga.ports import IDENTIFY, SNAPSHOT, PortMap, build_identity, encode_message, port_map
from codesign.hw.images import config_beats
from codesign.hw.pysim import item_beats


def plan_options(info: dict) -> dict:
    """The :func:`codesign.hw.plan.plan_accelerator` options a build was made with (``build.json``)."""
    plan = info.get("plan", {})
    options = {
        "target": plan.get("target", "generic"),
        "counters": plan.get("counter_set", "all"),
        "share": plan.get("share", "off"),
        "narrow": plan.get("narrow", "off"),
        "share_updates": plan.get("share_updates", "off"),
        "merge": plan.get("merge", "off"),
    }
    if info.get("weights") == "spram":
        options |= {"frozen": True, "spram": True}
    return options


@dataclass
class Result:
    """What the board answered for one sequence: logits ``(C,)`` and a class (``(T, C)`` and ``(T,)``
    for a per-step readout)."""

    logits: np.ndarray
    classes: np.ndarray


class BoardProtocol:
    """The byte protocol of one build (``BoardProtocol.from_build(BUILD)``)."""

    def __init__(self, info: dict, *, path: Path | None = None) -> None:
        self.info = info
        self.ports: PortMap = port_map(info, path=path, counters=False)
        self.identity = build_identity(info, counters=False)
        #: the identity of a bitstream that also serialises the counters (codesign synth --counters)
        self.identity_counters = build_identity(info, counters=True)
        missing = [k for k in ("inputs_payload", "results_payload", "readout") if k not in info]
        if missing:
            raise CodesignError(
                f"{path or 'build.json'}: {', '.join(missing)} missing; rebuild with `codesign rtl`"
            )
        for name in ("inputs", "results"):
            try:
                self.ports.stream(name)
            except KeyError:
                raise CodesignError(f"{path or 'build.json'}: no {name!r} stream in ports") from None
        self.inputs = Fields(info["inputs_payload"])
        self.results = Fields(info["results_payload"])
        self.config = Fields(info.get("config_payload", {}))
        self.counters = Fields(info.get("counters_fields", {}))
        self.classes = int(info["readout"]["classes"])
        self.per_step = bool(info["readout"].get("per_step", False))
        self.weights = info.get("weights", "baked")

    @classmethod
    def from_build(cls, build: str | Path) -> BoardProtocol:
        path = Path(build) / "build.json"
        try:
            info = json.loads(path.read_text())
        except FileNotFoundError:
            raise CodesignError(
                "build.json not found; make the build with `codesign rtl`", path=path
            ) from None
        except (OSError, ValueError) as err:
            raise CodesignError(f"not readable JSON ({err})", path=path) from None
        return cls(info, path=path)

    def accept(self, word: int) -> bool:
        """Whether ``word`` is this build's identity; a bitstream with counters makes them readable."""
        if word not in (self.identity, self.identity_counters):
            return False
        if word == self.identity_counters:
            self.identity = word
            self.ports = dataclasses.replace(self.ports, counters=True)
        return True

    # host -> device
    def identify_request(self) -> bytes:
        return bytes([IDENTIFY])

    def snapshot_request(self) -> bytes:
        return bytes([SNAPSHOT]) if self.ports.snapshot_port is not None else b""

    def step_messages(self, sequence: np.ndarray) -> list[bytes]:
        """The bytes of each step of one integer sequence ``(T, M)``."""
        stream = self.ports.stream("inputs")
        steps: list[bytes] = []
        current = bytearray()
        for beat in item_beats([np.asarray(sequence)]):
            current += encode_message(stream, self.inputs.pack(beat))
            if beat["step_end"]:
                steps.append(bytes(current))
                current = bytearray()
        return steps

    def config_bytes(self, bundle) -> bytes:
        """Every parameter of ``bundle`` as configuration messages (a ``runtime`` or ``spram`` build)."""
        from codesign.hw.plan import plan_accelerator

        if self.weights not in ("runtime", "spram"):
            raise CodesignError(
                f"this build has {self.weights!r} weights; only a runtime or spram build loads weights "
                "(codesign rtl --weights runtime)"
            )
        plan = plan_accelerator(bundle.manifest, int(self.info.get("lanes", 1)), **plan_options(self.info))
        stream = self.ports.stream("config")
        f = self.config
        return b"".join(
            encode_message(stream, f.pack({"target": t, "addr": a, "elem": e, "value": v}))
            for t, a, e, v in config_beats(bundle, plan)
        )

    # device -> host
    def results_needed(self, steps: int) -> int:
        """Final result beats one sequence of ``steps`` steps ends with."""
        return steps if self.per_step else 1

    def assemble(self, words: list[int], steps: int) -> Result:
        """The logits and classes of one sequence from its result words (every group of every result)."""
        logits: list[np.ndarray] = []
        classes: list[int] = []
        lanes = sum(1 for k in self.results.spec if k.startswith("logits["))
        row = np.zeros(self.classes + lanes, dtype=np.int64)
        for word in words:
            beat = self.results.unpack(word)
            lo = beat["group"] * lanes
            for lane in range(lanes):
                if lo + lane < len(row):
                    row[lo + lane] = beat[f"logits[{lane}]"]
            if beat["final"]:
                logits.append(row[: self.classes].copy())
                classes.append(beat["class_index"])
        if self.per_step:
            return Result(np.stack(logits), np.array(classes))
        return Result(logits[0], np.array(classes[0]))

    def is_final(self, word: int) -> bool:
        return bool(self.results.unpack(word)["final"])
