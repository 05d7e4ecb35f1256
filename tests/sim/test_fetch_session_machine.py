"""The fetch session cache (kop.api.fetch_sessions) against a model of a few lines
per rule, driven by hypothesis: sessions opened by three principals over two
namespaces, incremental fetches with right and wrong epochs and ids (their own and
others'), forgotten partitions, answers with records, errors and moved offsets, closes,
and time passing. The model keeps every session in a plain list and chooses victims by
sorting, as Kafka's rules read (idle longest first, then the smallest old session).

Checked after every step: the same sessions, with the same owners, epochs, partitions
in the same order and the same remembered offsets; the counters the metrics read; no
principal over its share and no more sessions than slots.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from kio.schema.fetch.v12.request import FetchPartition
from kio.static.primitive import i32, i64

from kop.api.fetch import _part
from kop.api.fetch_session import Key
from kop.api.fetch_sessions import FetchSessions, Full, Incremental, Owner, Refused
from kop.protocol.errors import ErrorCode

# A step costs microseconds (no storage, no loop): four times the tier's examples.
EXAMPLES = int(os.environ.get("KOP_SIM_EXAMPLES", "60"))
STEPS = int(os.environ.get("KOP_SIM_STEPS", "40"))
SLOTS, SHARE, EVICT_MS, MAX_PARTS = 3, 2, 100, 5
OWNERS = [Owner("PLAINTEXT", f"User:{p}", ns) for p in ("a", "b", "c") for ns in ("t/x", "t/y")]
PARTS = [("t", p) for p in range(6)]
# Small sessions mostly (so sizes tie, where eviction's rules are finest), now and then
# one larger than a session may be.
SIZES = st.lists(st.sampled_from(PARTS), unique=True, max_size=2) | st.just(PARTS)


@dataclass
class Model:
    id: int
    owner: Owner
    created: int
    used: int
    epoch: int = 1
    parts: dict[Key, list[int]] = field(default_factory=dict)  # offset, hw, start, stable
    evictable: bool = False
    size: int = 0


def asked(keys: list[Key], offset: int) -> list[tuple[Key, FetchPartition]]:
    limit = i32(1 << 20)
    return [
        (
            k,
            FetchPartition(
                partition=i32(k[1]), fetch_offset=i64(offset), partition_max_bytes=limit
            ),
        )
        for k in keys
    ]


class SessionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        ids = itertools.count(1)
        self.cache = FetchSessions(
            SLOTS, EVICT_MS, SHARE, MAX_PARTS, lambda: self.now, lambda: next(ids)
        )
        self.model: list[Model] = []
        self.evictions = 0

    # -- the model's rules ------------------------------------------------------------

    def _find(self, owner: Owner, sid: int) -> Model | None:
        return next((m for m in self.model if m.id == sid and m.owner == owner), None)

    def _touch(self, m: Model) -> None:
        self.model.remove(m)
        self.model.append(m)  # the list is in order of last use
        m.used, m.size = self.now, len(m.parts)
        m.evictable = self.now - m.created > EVICT_MS

    def _room(self, owner: Owner, size: int) -> bool:
        mine = [m for m in self.model if m.owner.principal == owner.principal]
        pool = mine if len(mine) >= SHARE else self.model if len(self.model) >= SLOTS else None
        if pool is None:
            return True
        if not pool:
            return False
        idle = min(pool, key=lambda m: (m.used, m.id))
        if self.now - idle.used > EVICT_MS:
            victim = idle
        else:
            old = sorted((m for m in pool if m.evictable), key=lambda m: (m.size, m.id))
            if not old or size <= old[0].size:
                return False
            victim = old[0]
        self.model.remove(victim)
        self.evictions += 1
        return True

    # -- steps ------------------------------------------------------------------------

    @rule(
        owner=st.sampled_from(OWNERS),
        keys=SIZES,
    )
    def open(self, owner: Owner, keys: list[Key]) -> None:
        plan = self.cache.begin(owner, 0, 0, asked(keys, 0), [])
        assert plan == Full(asked(keys, 0), open=True)
        parts = [(k, p, _part(k[1], ErrorCode.none, 3, 3, 0, b"")) for k, p in plan.asked]
        sid = self.cache.open(owner, parts)
        fits = len(keys) <= MAX_PARTS and self._room(owner, len(keys))
        assert (sid != 0) == fits
        if fits:
            m = Model(sid, owner, self.now, self.now, parts={k: [0, 3, 0, 3] for k in keys})
            self.model.append(m)
            self._touch(m)

    @rule(
        data=st.data(), owner=st.sampled_from(OWNERS), epoch_off=st.sampled_from([0, 0, 0, 1, -1]),
        named=st.lists(st.sampled_from(PARTS), unique=True, max_size=3),
        forgotten=st.lists(st.sampled_from(PARTS), unique=True, max_size=2),
        offset=st.integers(0, 9), records=st.sets(st.sampled_from(PARTS)),
        moved=st.sets(st.sampled_from(PARTS)), failed=st.sets(st.sampled_from(PARTS)),
    )  # fmt: skip
    def incremental(
        self, data: st.DataObject, owner: Owner, epoch_off: int, named: list[Key],
        forgotten: list[Key], offset: int, records: set[Key], moved: set[Key], failed: set[Key],
    ) -> None:  # fmt: skip
        ids = [m.id for m in self.model] + [999]
        sid = data.draw(st.sampled_from(ids))
        m = self._find(owner, sid)
        epoch = max(1, (m.epoch if m else 1) + epoch_off)
        plan = self.cache.begin(owner, sid, epoch, asked(named, offset), forgotten)
        if m is None:
            assert plan == Refused(ErrorCode.fetch_session_id_not_found)
        elif epoch != m.epoch:
            assert plan == Refused(ErrorCode.invalid_fetch_session_epoch)
        else:
            self._continue(m, plan, named, forgotten, offset, (records, moved, failed))

    @rule()
    def every_client_fetches(self) -> None:
        """A round of incremental fetches naming nothing, one per session (as consumers
        do all the time): it makes old sessions evictable by size."""
        for m in list(self.model):
            plan = self.cache.begin(m.owner, m.id, m.epoch, [], [])
            self._continue(m, plan, [], [], 0, (set(), set(), set()))

    def _continue(
        self, m: Model, plan: object, named: list[Key], forgotten: list[Key], offset: int,
        changes: tuple[set[Key], set[Key], set[Key]],
    ) -> None:  # fmt: skip
        records, moved, failed = changes
        for k in named:
            m.parts.setdefault(k, [0, -1, -1, -1])[0] = offset
        for k in forgotten:
            m.parts.pop(k, None)
        if not m.parts or len(m.parts) > MAX_PARTS:
            self.model.remove(m)
            gone = Refused(ErrorCode.fetch_session_id_not_found)
            assert plan == (Full([], open=False) if not m.parts else gone)
            return
        assert isinstance(plan, Incremental)
        self._touch(m)
        m.epoch += 1
        answers = []
        for k in m.parts:
            hw = m.parts[k][1] + (1 if k in moved else 0)
            code = ErrorCode.not_leader_or_follower if k in failed else ErrorCode.none
            answers.append((k, _part(k[1], code, hw, hw, 0, b"r" if k in records else b"")))
        _, kept = self.cache.answer(plan, answers)
        expected = []
        for k, part in answers:
            cached = m.parts[k]
            told = [part.high_watermark, part.log_start_offset, part.last_stable_offset]
            if part.records or part.error_code or cached[1:] != told:
                expected.append(k)
                cached[1:] = told
                if part.error_code:
                    cached[1] = -1
        assert [k for k, _ in kept] == expected
        for k in [k for k in expected if k in records]:
            m.parts[k] = m.parts.pop(k)

    @rule(data=st.data(), owner=st.sampled_from(OWNERS))
    def close(self, data: st.DataObject, owner: Owner) -> None:
        sid = data.draw(st.sampled_from([m.id for m in self.model] + [999]))
        assert self.cache.begin(owner, sid, -1, [], []) == Full([], open=False)
        m = self._find(owner, sid)
        if m is not None:
            self.model.remove(m)

    @rule(ms=st.sampled_from([1, EVICT_MS // 2, EVICT_MS, EVICT_MS + 1]))
    def wait(self, ms: int) -> None:
        self.now += ms

    @invariant()
    def same_sessions(self) -> None:
        assert self.cache.sessions == len(self.model) <= SLOTS
        assert self.cache.evictions == self.evictions
        assert self.cache.partitions == sum(m.size for m in self.model)
        for m in self.model:
            s = self.cache.get(m.owner, m.id)
            assert s is not None and s.epoch == m.epoch and s.last_used_ms == m.used
            got = {k: [c.asked.fetch_offset, c.high_watermark, c.log_start, c.last_stable]
                   for k, c in s.partitions.items()}  # fmt: skip
            assert list(got.items()) == list(m.parts.items())
        for p in {m.owner.principal for m in self.model}:
            assert sum(m.owner.principal == p for m in self.model) <= SHARE


def test_the_cache_agrees_with_its_model() -> None:
    run_state_machine_as_test(
        SessionMachine,
        settings=settings(
            max_examples=EXAMPLES * 4, stateful_step_count=STEPS, deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )  # fmt: skip
