"""Stages C0-C2b of an engine (issue, fetch, multiply-accumulate), shared by the layers and the readout.

:class:`MacFront` owns the engine's issue stage, its weight and bias memories (loaded through the
configuration stream), the kept accumulators of an event-driven engine, the state and pooled-sum
memories, and the lane array. It hands the engine, at C3 and from flip-flops:

* ``slot``: the slot (group, flags) the sums belong to;
* ``acc``: the lanes' sums (valid on the group's last slot);
* ``params``, ``state``, ``pool``: the group's words of those memories, read on its last slot.

The engine's later stages write the new state, accumulators and pooled sums back through the
``state_write``, ``acc_write`` and ``pool_write`` ports: the memories stay here, the decisions
there. A member exists only when the engine has that memory.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from codesign.hw.arrays import ArrayMemory, MergedMemory
from codesign.hw.config import ConfigSignature, drive_config_write
from codesign.hw.counters import CounterBank, count_memory
from codesign.hw.issue import IssueStage, SlotLayout, value_held
from codesign.hw.lanes import LaneArray
from codesign.hw.plan import SLICED_KEYS, AcceleratorPlan, EnginePlan, MemoryPlan, index_bits
from codesign.hw.signature import ItemLayout

__all__ = [
    "MacFront",
    "WriteLayout",
    "lane_fields",
    "lane_reads",
    "lane_slot",
    "state_by_lane",
    "state_interleaved",
]

HELD = ("params", "state", "pool")
"""Memories read on a group's last slot for the update stage."""

WRITTEN = ("state", "acc", "pool")
"""Memories the engine's later stages write back."""


def word_layout(mem: MemoryPlan, elements: int | None = None) -> data.ArrayLayout:
    return data.ArrayLayout(signed(mem.elem_bits), elements or mem.elements)


def state_by_lane(plan: AcceleratorPlan, e: EnginePlan) -> bool:
    """Whether engine ``e`` writes its state one lane at a time, on the update unit's turn for
    the lane (:class:`LaneWriteLayout`), instead of a whole word at C4: behind one update unit per
    layer on the UP5K, where the state word's copy per lane kept for C4 was a flip-flop per bit
    (64 in each JapaneseVowels layer at P = 4). A lane's fields must lie in one physical word
    (a folded word's slice holds whole lanes); the write enables one element per field (the
    EBR's write mask)."""
    if plan.target != "up5k" or not e.shared_update or "state" not in e.memories:
        return False
    if e.memories["state"].shared is not None:  # in a merged word (--merge): written whole at C4
        return False
    return e.memories["state"].elements % len(e.state_fields) == 0


def lane_fields(e: EnginePlan) -> dict[str, int]:
    """Elements one lane takes in a word of the memories read one lane per turn (:func:`lane_reads`)."""
    return {"state": len(e.state_fields), "pool": 1}


def lane_reads(plan: AcceleratorPlan, e: EnginePlan) -> tuple[str, ...]:
    """The memories among the state and pooled sums that engine ``e`` reads one lane per update
    turn, straight from the block RAM into the shared update unit (``{key}_lane``), instead of
    reading the group's whole word on its last slot into registers held for the unit's ``P``
    turns: behind one update unit per layer on the UP5K, where the held words were a flip-flop
    per bit that no LUT fed (64 + 64 + 96 of them in JapaneseVowels at P = 4). Lane ``l`` is read
    in the cycle before its turn (C2b + ``l``), so the unit sees the same words as from the
    registers. A lane's fields must lie in one physical word, as for :func:`state_by_lane`; a
    memory in a merged word (``--merge``) keeps its held word."""
    if plan.target != "up5k" or not e.shared_update:
        return ()
    fields = lane_fields(e)
    keys = []
    for key in ("state", "pool"):
        mem = e.memories.get(key)
        if mem is None or mem.shared is not None or mem.elements % fields[key]:
            continue
        if mem.fold * (mem.elements // fields[key]) < e.lanes:  # pragma: no cover - the plan's shapes
            continue
        if key == "state" and state_interleaved(e, mem) is None:
            continue
        keys.append(key)
    return tuple(keys)


def lane_slot(e: EnginePlan, mem: MemoryPlan, fields: int, lane: int, interleaved: bool) -> tuple[int, int]:
    """``(slice, place)`` of lane ``lane``'s ``fields`` elements in a folded word (``F`` slices)
    written or read one lane at a time. ``interleaved`` (a state read one lane per turn,
    :func:`lane_reads`): the lanes go round the slices (lane ``l`` in slice ``l mod F``, place
    ``l // F``), so lanes next to each other lie in different physical words and a lane's read
    does not fall on the word the lane before is being written to. Otherwise consecutive lanes
    share a word (slice ``l // k``, place ``l mod k``, ``k`` lanes per physical word), as the held
    words' reads (``MacFront._read_for_update``) take them."""
    if interleaved and mem.fold > 1:
        return lane % mem.fold, lane // mem.fold
    k = mem.elements // fields
    return lane // k, lane % k


def state_interleaved(e: EnginePlan, mem: MemoryPlan) -> bool | None:
    """The layout of a state read one lane per turn (:func:`lane_slot`) under which no lane's
    read falls on the physical word another lane is written to in that cycle: consecutive lanes
    per word (``False``) or round the slices (``True``); ``None`` when both collide (the state
    then keeps its held word). Lane ``j`` is read in C3 + ``j``, lane ``i`` written in C3 + ``i``
    + ``update_latency + 1`` (its turn, the unit's input register, its stages, the tail cycle
    of ``LayerEngine._shared_update``): they meet when ``j = i + update_latency + 1``. A block RAM's read of a word written in the same cycle is
    undefined on the UP5K (yosys would make it read-first, ``MemoryPlan.no_collisions``)."""
    d = e.update_latency + 1
    fields = len(e.state_fields)
    for interleaved in (False, True):
        slots = [lane_slot(e, mem, fields, lane, interleaved)[0] for lane in range(e.lanes)]
        if all(slots[i] != slots[i + d] for i in range(e.lanes - d)):
            return interleaved
    return None


class LaneWriteLayout(data.StructLayout):
    """One lane's fields of a word: ``data`` to lane ``lane`` of logical word ``addr`` when ``en``."""

    def __init__(self, e: EnginePlan) -> None:
        super().__init__(
            {
                "addr": unsigned(index_bits(e.groups)),
                "lane": unsigned(index_bits(e.lanes)),
                "en": unsigned(1),
                "data": data.ArrayLayout(signed(e.state_bits), len(e.state_fields)),
            }
        )


class WriteLayout(data.StructLayout):
    """One write of a whole word: ``data`` to word ``addr`` when ``en``; of a folded memory
    (``MemoryPlan.fold``), the logical word (``elements``) to logical address ``addr``."""

    def __init__(self, mem: MemoryPlan, elements: int | None = None) -> None:
        super().__init__(
            {
                "addr": unsigned(index_bits(mem.depth // mem.fold)),
                "en": unsigned(1),
                "data": word_layout(mem, elements),
            }
        )


class MacFront(wiring.Component):
    """Issue, fetch and MAC stages of engine ``e`` (``P`` lanes x its matrices)."""

    def __init__(self, plan: AcceleratorPlan, e: EnginePlan, images: dict | None = None) -> None:
        self.plan, self.engine = plan, e
        self.images = images or {}
        self.issue = IssueStage(
            plan, e, lose_stalled=plan.faults.active("stalled_beat_lost", e.index), images=self.images
        )
        self.counters = CounterBank(plan, f"{e.name}.front")
        mems = e.memories
        members = {
            "items": In(stream.Signature(ItemLayout(e.inputs, e.item_bits))),
            "config": In(ConfigSignature(plan)),
            "credit": In(1),  # room downstream for one more group
            "starting": Out(1),  # a group starts this cycle (takes one credit)
            "slot": Out(SlotLayout(e)),
            "acc": Out(data.ArrayLayout(signed(e.acc_bits), e.lanes * len(e.matrices))),
        }
        # a folded word's elements as the engine sees it (the memory holds slices of them)
        logical = {"acc": e.lanes * len(e.matrices), "state": e.lanes * len(e.state_fields), "pool": e.lanes}
        by_turn = lane_reads(plan, e)
        members |= {
            key: Out(word_layout(mems[key], logical.get(key)))
            for key in HELD
            if key in mems and key not in by_turn
        }
        fields = lane_fields(e)
        members |= {f"{key}_lane": Out(word_layout(mems[key], fields[key])) for key in by_turn}
        members |= {
            f"{key}_write": In(WriteLayout(mems[key], logical.get(key))) for key in WRITTEN if key in mems
        }
        if state_by_lane(plan, e):
            del members["state_write"]
            members["state_lane_write"] = In(LaneWriteLayout(e))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.issue = issue = self.issue
        wiring.connect(m, wiring.flipped(self.items), issue.items)
        m.d.comb += [issue.credit.eq(self.credit), self.starting.eq(issue.starting)]
        if self.engine.period:  # the issue stage holds the selective-update tables
            m.d.comb += [
                issue.config.valid.eq(self.config.valid),
                issue.config.payload.eq(self.config.payload),
            ]
        # the slot is registered once more before the fetch: the item memory's output through the
        # weight address adder into the weight memory was the ECP5's longest path at P = 2
        slot = Signal(SlotLayout(self.engine), name="slot_c1")
        m.d.sync += slot.eq(issue.slot)
        ports = self._memories(m)
        s2 = self._fetch(m, slot, ports)
        s2a = Signal(SlotLayout(self.engine), name="slot_c2a")
        m.d.sync += s2a.eq(s2)
        use_acc = self._seeds(m, s2a if self.late_seeds else s2, ports)
        self._mac(m, slot, s2, use_acc, ports)
        self._read_for_update(m, s2a, ports)
        return m

    # ------------------------------------------------------------ memories
    def _memories(self, m: Module) -> dict:
        """Every memory of the engine with its ports: ``{key: (read port, write port)}``."""
        e, mems = self.engine, self.engine.memories
        ports = {}
        merged: dict[str, MergedMemory] = {}  # --merge auto: physical memory -> its parts' ports
        for key in ("weights", "bias", "params", "state", "acc", "pool"):
            if key not in mems:
                continue
            loadable = mems[key].config_id is not None
            rom = mems[key].rom
            huge = mems[key].style == "huge"  # a single-port RAM has no initial values (--weights spram)
            image = self.images.get(mems[key].name) if (loadable or rom) and not huge else None
            if rom and image is None:  # pragma: no cover - Accelerator passes images for frozen builds
                raise ValueError(f"{mems[key].name}: a ROM needs its contents")
            shared = mems[key].shared
            if shared is not None and shared not in merged:
                parts = tuple(
                    sorted((x for x in mems.values() if x.shared == shared), key=lambda x: x.offset)
                )
                merged[shared] = MergedMemory(m, shared.removeprefix(f"{e.name}_"), parts, self.images)
            mem = merged[shared] if shared is not None else ArrayMemory(m, key, mems[key], image)
            wr = None
            if huge:
                rd, wr = mem.shared_ports(m)
            elif shared is not None:
                rd = mem.read_port(mems[key])
            elif rom and mems[key].style == "logic" and self.late_seeds:
                rd = mem.registered_address_port(m)  # a LUT ROM: the address registered, not the word
            else:
                rd = mem.read_port()
            m.d.comb += rd.en.eq(0)
            by_lane = key == "state" and state_by_lane(self.plan, e)
            if not rom and not huge:
                wr = (
                    mem.write_port(mems[key], granular=loadable)
                    if shared
                    else mem.write_port(granular=loadable or by_lane)
                )
            if by_lane:
                self._lane_write(m, wr, self.state_lane_write, mems[key])
            elif loadable:
                drive_config_write(m, wr, self.config, mems[key])
            elif not rom and mems[key].fold > 1 and key in SLICED_KEYS:
                self._sliced_write(m, wr, getattr(self, f"{key}_write"), mems[key])
            elif not rom and mems[key].fold > 1:
                self._folded_write(m, wr, getattr(self, f"{key}_write"), mems[key])
            elif not rom:
                request = getattr(self, f"{key}_write")
                m.d.comb += [wr.addr.eq(request.addr), wr.en.eq(request.en), wr.data.eq(request.data)]
            count_memory(m, self.counters, mems[key].name, [rd], [wr] if wr is not None else [])
            ports[key] = (rd, wr)
        for mem in merged.values():
            mem.connect()
        assert e.mode != "events" or "acc" in ports
        return ports

    def _folded_write(self, m: Module, wr, request, mem: MemoryPlan) -> None:
        """Write a word of ``mem.fold`` slices (``--narrow``, the kept accumulators): slice ``q``
        goes to address ``F * addr + q``, ``q`` passes (``q x digit_passes`` cycles) after the
        request, from the request's data as it is then. That data is the lane array's sums, whose
        slice ``q`` the next group changes on its pass ``q`` at the earliest, one cycle after this
        write; the next step reads slice ``q`` of the group on its first slot's pass ``q``, as far
        behind this write as the read of an unfolded word is behind its write. One slice is
        written per cycle at most (a group's last slot takes ``F`` passes)."""
        e = self.engine
        folds, step = mem.fold, e.digit_passes
        u, n = mem.elements // e.lanes, len(e.matrices)
        en, addr = request.en, request.addr
        delayed = {0: (en, addr)}
        for k in range(1, (folds - 1) * step + 1):
            en_k, addr_k = (
                Signal(name=f"{mem.name}_wen_d{k}"),
                Signal.like(addr, name=f"{mem.name}_waddr_d{k}"),
            )
            m.d.sync += [en_k.eq(en), addr_k.eq(addr)]
            en, addr = en_k, addr_k
            delayed[k] = (en, addr)
        for q in reversed(range(folds)):  # at most one slice is due in a cycle
            en_q, addr_q = delayed[q * step]
            with m.If(en_q):
                m.d.comb += [wr.en.eq(1), wr.addr.eq(addr_q * folds + q)]
                for lane in range(e.lanes):
                    for j in range(u):
                        k = q * u + j
                        m.d.comb += wr.data[lane * u + j].eq(request.data[lane * n + k] if k < n else 0)

    def _lane_write(self, m: Module, wr, request, mem: MemoryPlan) -> None:
        """Write one lane's fields (:func:`state_by_lane`): lane ``l`` of logical word ``addr`` is
        at elements ``place x fields ..`` of physical word ``F x addr + slice`` (``F`` slices per
        logical word; :func:`lane_slot`); only its elements are enabled."""
        e = self.engine
        fields = len(e.state_fields)
        interleaved = "state" in lane_reads(self.plan, e) and bool(state_interleaved(e, mem))
        with m.Switch(request.lane):
            for lane in range(e.lanes):
                with m.Case(lane):
                    slot, place = lane_slot(e, mem, fields, lane, interleaved)
                    addr = request.addr * mem.fold + slot if mem.fold > 1 else request.addr
                    m.d.comb += wr.addr.eq(addr)
                    for k in range(fields):
                        m.d.comb += [
                            wr.en[place * fields + k].eq(request.en),
                            wr.data[place * fields + k].eq(request.data[k]),
                        ]

    def _sliced_write(self, m: Module, wr, request, mem: MemoryPlan) -> None:
        """Write a word of ``mem.fold`` slices of consecutive elements (``--narrow``, the state and
        pooled sums): slice 0 to address ``F * addr`` with the request (C4), slice ``q`` ``q``
        cycles later from a register that took the word with the request (the C4 registers move
        on with the next slot). :func:`codesign.hw.issue.drain_cycles` keeps the next step's read
        of each slice behind its write; the next group's request comes ``passes`` cycles later at
        the earliest, after the last slice. Behind one update unit per layer the request's data
        holds long enough (:meth:`_request_holds`) and slices 1.. are written straight from it."""
        folds, per = mem.fold, mem.elements
        logical = len(request.data)
        # the elements of slices 1.. (slice 0 is written with the request)
        if self._request_holds(mem, logical):
            kept = {i: request.data[i] for i in range(per, logical)}
        else:
            kept = {
                i: Signal.like(request.data[i], name=f"{mem.name}_wdata_{i}") for i in range(per, logical)
            }
            with m.If(request.en):
                m.d.sync += [reg.eq(request.data[i]) for i, reg in kept.items()]
        en, addr = request.en, request.addr
        for q in range(folds):
            if q:
                en_q, addr_q = (
                    Signal(name=f"{mem.name}_wen_d{q}"),
                    Signal.like(addr, name=f"{mem.name}_waddr_d{q}"),
                )
                m.d.sync += [en_q.eq(en), addr_q.eq(addr)]
                en, addr = en_q, addr_q
            with m.If(en):
                m.d.comb += [wr.en.eq(1), wr.addr.eq(addr * folds + q)]
                for j in range(per):
                    i = q * per + j
                    m.d.comb += wr.data[j].eq((request.data[i] if q == 0 else kept[i]) if i < logical else 0)

    def _request_holds(self, mem: MemoryPlan, logical: int) -> bool:
        """Whether a write request's data still holds when its last slice is written, so slices
        1.. need no register of their own. With one update unit per layer (``--share-updates``)
        lane ``l``'s C4 registers take the next group's results on its turn, ``P - 1 + passes + l``
        cycles after this group's at the earliest (the issue stage's gap of ``P - 1`` cycles and the
        next group's ``passes`` or more issue cycles), while slice ``q`` is written ``q`` cycles
        after the request (``P`` cycles after the unit's first turn): the lanes of slice ``q`` must
        be at least ``q - passes + 1``. With a unit per lane the C4 registers change every cycle."""
        e = self.engine
        if not e.shared_update:
            return False
        per_lane = logical // e.lanes
        return all(
            q <= e.passes - 1 + i // per_lane
            for q in range(1, mem.fold)
            for i in range(q * mem.elements, min(logical, (q + 1) * mem.elements))
        )

    def _pass(self, slot):
        """The matrix pass of ``slot``'s part: ``part // digit_passes`` (0 without sharing)."""
        e = self.engine
        if e.passes == 1:
            return 0
        return slot.part // e.digit_passes if e.digit_passes > 1 else slot.part

    def _first_part(self, slot):
        """Whether ``slot`` is its item's first part: with shared multipliers an item comes once per
        part, and its weight word, biases and kept sums are read on the first only (a memory's read
        data holds until the next read, so the lane array sees them on every part)."""
        return slot.part == 0 if self.engine.passes > 1 else 1

    # ------------------------------------------------------------ C1 fetch
    def _fetch(self, m: Module, slot, ports):
        """Read the item's weight word (the seeds are read one stage later, in :meth:`_seeds`); a
        folded word (``MemoryPlan.fold``, ``--narrow``) one slice per pass, the pass's own."""
        w_rd = ports["weights"][0]
        folds = self.engine.memories["weights"].fold
        if folds == 1:
            m.d.comb += w_rd.addr.eq(slot.base + slot.index)
            read = self._first_part(slot)
        else:  # --narrow: pass q of the slot reads slice q of the item's word (its digit pieces, again)
            m.d.comb += w_rd.addr.eq((slot.base + slot.index) * folds + self._pass(slot))
            read = 1
        with m.If(slot.valid & ~slot.empty & read):
            m.d.comb += w_rd.en.eq(1)
        s2 = Signal(SlotLayout(self.engine), name="slot_c2")
        m.d.sync += s2.eq(slot)
        return s2

    @property
    def late_seeds(self) -> bool:
        """Whether the seeds are read in C2a and reach the adder (C2b) straight from the memory's
        read data, without the lane array's seed register: on the UP5K, where logic cells run out
        first (``P x matrices x acc_bits`` flip-flops, 112 in JapaneseVowels' layer 1 at P = 4)
        and the clock target (30 MHz) leaves room for the read before the adder. Elsewhere the
        register keeps the block RAM's clock-to-output delay off the adder's path. The same
        trade puts a ROM in LUTs behind a registered address rather than a registered word
        (:meth:`~codesign.hw.arrays.ArrayMemory.registered_address_port`)."""
        return self.plan.target == "up5k"

    def _seeds(self, m: Module, s2, ports):
        """On a group's first slot, read the biases or the kept accumulators in C2, so they reach
        the lane array's adder (C2b) through one register (its ``seeds`` port is sampled one cycle
        after the operands): reading them with the weights in C1 cost a second register per
        product (``P x matrices x acc_bits`` flip-flops). With :attr:`late_seeds` ``s2`` is the
        slot at C2a: the read comes a cycle later and its data goes straight to the adder. Returns
        whether the read data are the kept sums (registered: aligned with the data)."""
        b_rd = ports["bias"][0]
        acc_rd = ports["acc"][0] if "acc" in ports else None
        use_acc = Signal()
        m.d.comb += use_acc.eq(~s2.seq_first if acc_rd is not None else 0)
        acc_folds = self.engine.memories["acc"].fold if acc_rd is not None else 1
        b_folds = self.engine.memories["bias"].fold
        # folded (--narrow): pass q reads slice q of the group's biases or kept sums
        m.d.comb += b_rd.addr.eq(s2.group * b_folds + self._pass(s2) if b_folds > 1 else s2.group)
        read_bias = self._first_part(s2) if b_folds == 1 else 1
        with m.If(s2.valid & s2.first):
            if acc_rd is None:
                with m.If(read_bias):
                    m.d.comb += b_rd.en.eq(1)
            else:
                with m.If(use_acc & (self._first_part(s2) if acc_folds == 1 else 1)):
                    m.d.comb += [acc_rd.en.eq(1), acc_rd.addr.eq(s2.group * acc_folds + self._pass(s2))]
                with m.Elif(~use_acc & read_bias):
                    m.d.comb += b_rd.en.eq(1)
        use_acc2a = Signal()
        m.d.sync += use_acc2a.eq(use_acc)
        return use_acc2a

    # ------------------------------------------------------------ C2 MAC
    def _mac(self, m: Module, slot, s2, use_acc, ports) -> None:
        """The lane array: operands in C2, products in C2a, sums in C2b (``acc`` at C3); ``slot`` is
        the slot at C1, ``s2`` at C2."""
        e = self.engine
        p, n_mat, groups = e.lanes, len(e.matrices), e.groups
        w_rd, b_rd = ports["weights"][0], ports["bias"][0]
        acc_rd = ports["acc"][0] if "acc" in ports else None
        m.submodules.lanes = lanes = LaneArray(
            lanes=p,
            matrices=n_mat,
            weight_bits=e.weight_bits,
            value_bits=e.item_bits,
            acc_bits=e.acc_bits,
            multiplier=e.multiplier,
            hard_products=e.hard_products,
            lane_multipliers=e.lane_multipliers,
            digit_passes=e.digit_passes,
            folded=e.memories["weights"].fold > 1,
            seed_register=not self.late_seeds,
            value_held=value_held(e),
        )
        # the slot's value at C2: its own, or (value_held) its next part's at C1, the same
        value = slot.value if value_held(e) else s2.value
        m.d.comb += [
            lanes.valid.eq(s2.valid),
            lanes.first.eq(s2.first),
            lanes.value.eq(value),
            # a biases-only slot does not read the weights: multiply 0 by 0, not by whatever the
            # read register holds (never loaded after power-up: X in a 4-state simulator)
            lanes.weights.eq(Mux(s2.empty, 0, w_rd.data.as_value())),
            self.acc.eq(lanes.acc),
        ]
        if e.passes > 1:
            m.d.comb += lanes.part.eq(s2.part)
        no_bias = self.plan.faults.active("readout_bias_ignored", e.index)
        u = e.memories["acc"].elements // p if acc_rd is not None else n_mat  # a folded word: P x u
        ub = e.memories["bias"].elements // p
        for i in range(p * n_mat):
            bias_seed = 0 if no_bias else b_rd.data[(i // n_mat) * ub + (i % n_mat) % ub]
            # element k of a lane, when its pass comes, is element k mod u of the slice then read
            kept = acc_rd.data[(i // n_mat) * u + (i % n_mat) % u] if acc_rd is not None else None
            seed = bias_seed if acc_rd is None else Mux(use_acc, kept, bias_seed)
            m.d.comb += lanes.seeds[i].eq(seed)
        last_lanes = e.size - (groups - 1) * p
        valid_lanes = Mux(s2.group == groups - 1, last_lanes, p) if last_lanes != p else p
        if e.period and e.mode == "scratch":  # a closed neuron's sum is not needed (padding: closed)
            valid_lanes = sum(s2.open[lane] for lane in range(p))
        with m.If(s2.valid & ~s2.empty & (value != 0) & self._first_part(s2)):
            self.counters.count(m, f"{e.name}_macs", valid_lanes * n_mat)

    # ------------------------------------------------------------ C2a/C2b reads for C3
    def _read_for_update(self, m: Module, s2a, ports) -> None:
        """A group's last slot reads its state, parameters and pooled sum in C2a and registers them
        in C2b, so they reach C3 with the sums and from flip-flops (a block RAM's clock-to-output
        delay is not on the update stage's path)."""
        mems = self.engine.memories
        by_turn = lane_reads(self.plan, self.engine)
        held = [key for key in HELD if key in ports and key not in by_turn]
        with m.If(s2a.valid & s2a.last):
            for key in held:
                if mems[key].fold == 1:
                    rd = ports[key][0]
                    m.d.comb += [rd.en.eq(1), rd.addr.eq(s2a.group)]
        for key in held:
            if mems[key].fold == 1:
                m.d.sync += getattr(self, key).eq(ports[key][0].data)
                continue
            # folded (--narrow): pass q of the last slot reads slice q, which the next cycle's
            # register takes into its place in the held word (ready by C3 of the last part)
            rd, folds, per = ports[key][0], mems[key].fold, mems[key].elements
            reading = s2a.valid & s2a.final
            with m.If(reading):
                m.d.comb += [rd.en.eq(1), rd.addr.eq(s2a.group * folds + self._pass(s2a))]
            taken = Signal(name=f"{key}_slice_taken")
            slice_taken = Signal(range(folds), name=f"{key}_slice")
            m.d.sync += [taken.eq(reading), slice_taken.eq(self._pass(s2a))]
            word = getattr(self, key)
            for q in range(folds):
                with m.If(taken & (slice_taken == q)):
                    for j in range(per):
                        if q * per + j < len(word):
                            m.d.sync += word[q * per + j].eq(rd.data[j])
        s2b = Signal(SlotLayout(self.engine), name="slot_c2b")
        m.d.sync += [s2b.eq(s2a), self.slot.eq(s2b)]
        if by_turn:
            self._read_by_turn(m, self.slot, ports, by_turn)

    def _read_by_turn(self, m: Module, s3, ports, keys: tuple[str, ...]) -> None:
        """Read lane ``l``'s fields of the state and pooled sum (:func:`lane_reads`) in cycle
        C3 + ``l`` of a group's last slot, the update unit's turn for lane ``l``, so they are on
        the read port's data in the next cycle, when the unit works on the lane's registered
        sums: the block RAM's read register is the unit's input register for them. Lane ``l`` is
        at elements ``place x fields ..`` of physical word ``F x group + slice`` (:func:`lane_slot`,
        as :meth:`_lane_write` writes the state), laid out so that this read never falls on the
        word written in its cycle (:func:`state_interleaved`): the plan marks the memory
        collision-free (``MemoryPlan.no_collisions``) and the block RAM need not order a read and
        a write of one word. The pooled sums are written at C4, after the group's last read."""
        e = self.engine
        p = e.lanes
        rd_turn = Signal(range(p), name="read_turn")
        rd_group = Signal.like(s3.group, name="read_group")
        lane = Signal(range(p), name="read_lane")
        group = Signal.like(s3.group, name="read_lane_group")
        reading = Signal(name="reading_lane")
        m.d.comb += [
            lane.eq(rd_turn),
            group.eq(Mux(rd_turn != 0, rd_group, s3.group)),
            reading.eq((s3.valid & s3.last) | (rd_turn != 0)),
        ]
        if p > 1:
            with m.If(s3.valid & s3.last):
                m.d.sync += [rd_turn.eq(1), rd_group.eq(s3.group)]
            with m.Elif(rd_turn != 0):
                m.d.sync += rd_turn.eq(Mux(rd_turn == p - 1, 0, rd_turn + 1))
        fields = lane_fields(e)
        for key in keys:
            mem, n = e.memories[key], fields[key]
            interleaved = key == "state" and bool(state_interleaved(e, mem))
            slots = [lane_slot(e, mem, n, lane, interleaved) for lane in range(p)]
            rd = ports[key][0]
            out = getattr(self, f"{key}_lane")
            places = sorted({place for _, place in slots})
            place = Signal(range(max(places) + 1), name=f"{key}_read_place")  # the lane's place in the word
            with m.If(reading):
                m.d.comb += rd.en.eq(1)
                with m.Switch(lane):
                    for ln, (slot, at) in enumerate(slots):
                        with m.Case(ln):
                            m.d.comb += rd.addr.eq(group * mem.fold + slot if mem.fold > 1 else group)
                            if len(places) > 1:
                                m.d.sync += place.eq(at)
            if len(places) == 1:
                m.d.comb += [out[f].eq(rd.data[places[0] * n + f]) for f in range(n)]
                continue
            with m.Switch(place):
                for j in places:
                    with m.Case(j):
                        m.d.comb += [out[f].eq(rd.data[j * n + f]) for f in range(n)]
