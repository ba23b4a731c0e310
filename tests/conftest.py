import os

import pytest
import torch

torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture
def rng_seed() -> int:
    return 1234


@pytest.fixture
def collision_watch(monkeypatch) -> tuple[list, list, object]:
    """Record every Amaranth memory the design makes, and a simulation process that notes each
    cycle in which a memory marked ``no_rw_check`` (``MemoryPlan.no_collisions``) reads the word a
    write port writes: ``(cycle, depth, width, address)``."""
    from amaranth.hdl import Shape
    from amaranth.lib.memory import Memory

    memories: list = []
    original = Memory.__init__

    def record(self, *args, **kwargs):
        original(self, *args, **kwargs)
        memories.append(self)

    monkeypatch.setattr(Memory, "__init__", record)
    collisions: list = []

    async def monitor(ctx) -> None:
        pairs = [
            (mem, rd, wr)
            for mem in memories
            if (mem.attrs or {}).get("no_rw_check")
            for rd in mem.read_ports
            if rd.domain != "comb"
            for wr in mem.write_ports
        ]
        signals = [s for _, rd, wr in pairs for s in (rd.en, rd.addr, wr.en, wr.addr)]
        cycle = 0
        async for _, _, *values in ctx.tick().sample(*signals):
            for n, (mem, _, _) in enumerate(pairs):
                ren, raddr, wen, waddr = values[4 * n : 4 * n + 4]
                if ren and wen and raddr == waddr:
                    collisions.append((cycle, mem.depth, Shape.cast(mem.shape).width, raddr))
            cycle += 1

    return collisions, memories, monitor
