"""One share-partition's held records (kop/groups/share/records.py) driven by
hypothesis beside a model of Pulsar's Shared subscription: entries are delivered
(again after a release, counted), members acquire, accept, release, reject and renew,
locks expire, members leave, and kop's consumer reattaches (Pulsar takes back
everything it held).

Checked after every step: no record is accepted twice; an entry goes back to Pulsar
only with no record of it resolved, and is acknowledged only with every record
resolved (so only a reattach redelivers an accepted record, one of an entry not yet
acknowledged whole); nothing is lost (every record is held, in Pulsar, or resolved); no record is
delivered more often than the limit allows; a member that does not hold a record
cannot acknowledge it, and a refused acknowledgement changes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kop.groups.share.records import (
    AckBatch,
    AckType,
    RecordState,
    Settled,
    ShareLimits,
    ShareRecords,
)
from kop.protocol.errors import ErrorCode, KafkaError

EXAMPLES = 4 * int(os.environ.get("KOP_SIM_EXAMPLES", "60"))  # cheap steps
STEPS = int(os.environ.get("KOP_SIM_STEPS", "50"))
MEMBERS = ["a", "b", "c"]
LIMITS = ShareLimits(lock_ms=1_000, delivery_limit=2, max_locks=12)


@dataclass(frozen=True)
class Token:
    base: int
    epoch: int


class ShareRecordsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.r: ShareRecords[Token] = ShareRecords(LIMITS)
        self.now = 0
        self.epoch = 1
        self.next_base = 0
        self.sizes: dict[int, int] = {}  # entry base -> records
        self.pulsar: dict[int, int] = {}  # undelivered entries -> deliveries before
        self.out: dict[int, int] = {}  # entries delivered to kop (this epoch) -> deliveries
        self.acked: set[int] = set()  # entries Pulsar no longer has
        self.accepted: dict[int, int] = {}  # offset -> times accepted
        self.resolved: set[int] = set()  # offsets accepted, rejected or archived
        self.acquired: dict[int, str] = {}  # offset -> member (as the members believe)
        self.deliveries: dict[int, int] = {}  # offset -> its delivery count when last acquired

    # -- Pulsar ---------------------------------------------------------------------

    @rule(size=st.integers(1, 4))
    def produce(self, size: int) -> None:
        self.sizes[self.next_base] = size
        self.pulsar[self.next_base] = 0
        self.next_base += size

    @precondition(lambda self: bool(self.pulsar))
    @rule(data=st.data())
    def deliver(self, data: st.DataObject) -> None:
        base = data.draw(st.sampled_from(sorted(self.pulsar)))
        before = self.pulsar.pop(base)
        self.out[base] = before
        self.r.offer(Token(base, self.epoch), base, self.sizes[base], before)

    @rule()
    def reattach(self) -> None:
        """kop's consumer lost its connection: Pulsar takes back what it was sent (a
        departure is not a counted redelivery)."""
        self.epoch += 1
        for base, before in self.out.items():
            self.pulsar[base] = before
            # What was accepted of an entry not acknowledged whole is not in Pulsar:
            # delivered again (at least once, D27).
            for offset in range(base, base + self.sizes[base]):
                self.resolved.discard(offset)
                self.accepted.pop(offset, None)
        self.out.clear()
        self.r.drop(lambda t: t.epoch == self.epoch)
        self.acquired.clear()

    def _apply(self, settled: Settled[Token]) -> None:
        tokens = [t.base for t in settled.ack + settled.release]
        assert len(tokens) == len(set(tokens)), "an entry settled twice at once"
        for token in settled.ack:
            assert token.epoch == self.epoch
            base = token.base
            offsets = range(base, base + self.sizes[base])
            for o in offsets:  # open ones were archived by a release: at the delivery limit
                if o not in self.resolved:
                    assert self.deliveries.get(o, 0) >= LIMITS.delivery_limit, "acked while open"
                    self.resolved.add(o)
            self.out.pop(base)
            self.acked.add(base)
        for token in settled.release:
            base = token.base
            offsets = range(base, base + self.sizes[base])
            assert not any(o in self.resolved for o in offsets), "given back with records done"
            self.pulsar[base] = self.out.pop(base) + 1

    # -- members --------------------------------------------------------------------

    @rule(member=st.sampled_from(MEMBERS), most=st.integers(1, 6))
    def acquire(self, member: str, most: int) -> None:
        for got in self.r.acquire(member, most, self.now):
            assert got.delivery_count <= LIMITS.delivery_limit
            for offset in range(got.first, got.last + 1):
                assert offset not in self.acquired, "acquired twice"
                assert offset not in self.resolved
                self.acquired[offset] = member
                self.deliveries[offset] = got.delivery_count
        assert len(self.acquired) <= LIMITS.max_locks

    @precondition(lambda self: bool(self.acquired))
    @rule(data=st.data(), kind=st.sampled_from(list(AckType)), honest=st.booleans())
    def acknowledge(self, data: st.DataObject, kind: AckType, honest: bool) -> None:
        offset = data.draw(st.sampled_from(sorted(self.acquired)))
        owner = self.acquired[offset]
        member = owner if honest else data.draw(st.sampled_from(MEMBERS))
        before = self.r.states()
        try:
            settled = self.r.acknowledge(member, [AckBatch(offset, offset, (kind,))], self.now)
        except KafkaError as exc:
            assert member != owner and exc.code == ErrorCode.invalid_record_state
            assert self.r.states() == before, "a refused acknowledgement changed something"
            return
        assert member == owner
        dies = kind is AckType.REJECT or (
            kind is AckType.RELEASE and self.deliveries[offset] >= LIMITS.delivery_limit
        )
        self._letters(settled, {offset} if dies else set())
        if kind is AckType.RENEW:
            return
        del self.acquired[offset]
        if kind is AckType.ACCEPT:
            self.accepted[offset] = self.accepted.get(offset, 0) + 1
            self.resolved.add(offset)
        elif kind in (AckType.REJECT, AckType.GAP):
            self.resolved.add(offset)
        self._note_archived()
        self._apply(settled)

    @rule(ms=st.integers(1, 1_500))
    def tick(self, ms: int) -> None:
        self.now += ms
        held = set(self.acquired)
        settled = self.r.expire(self.now)
        self._sync_acquired()
        self._letters(settled, self._past_limit(held - set(self.acquired)))
        self._apply(settled)

    @rule(member=st.sampled_from(MEMBERS))
    def leave(self, member: str) -> None:
        held = set(self.acquired)
        settled = self.r.release_member(member)
        self._sync_acquired()
        self._letters(settled, self._past_limit(held - set(self.acquired)))
        self._apply(settled)

    def _past_limit(self, released: set[int]) -> set[int]:
        return {o for o in released if self.deliveries[o] >= LIMITS.delivery_limit}

    def _letters(self, settled: Settled[Token], expected: set[int]) -> None:
        """A dead letter for exactly the records rejected or archived at their limit
        (a gap, an acceptance, a renewal or a release below the limit: none), each
        with the delivery count it was last acquired with."""
        assert sorted(d.offset for d in settled.dead) == sorted(expected)
        assert all(d.count == self.deliveries[d.offset] for d in settled.dead)

    def _sync_acquired(self) -> None:
        held = {o for o, s, _ in self.r.states() if s is RecordState.ACQUIRED}
        self.acquired = {o: m for o, m in self.acquired.items() if o in held}
        self._note_archived()

    def _note_archived(self) -> None:
        for offset, state, _ in self.r.states():
            if state is RecordState.ARCHIVED:
                self.resolved.add(offset)

    # -- invariants -----------------------------------------------------------------

    @invariant()
    def no_record_accepted_twice(self) -> None:
        assert all(times == 1 for times in self.accepted.values())

    @invariant()
    def nothing_lost(self) -> None:
        held = {o for o, _, _ in self.r.states()}
        for base, size in self.sizes.items():
            where = [base in self.pulsar, base in self.out, base in self.acked]
            assert sum(where) == 1, f"entry {base} is in {where}"
            if base in self.out:
                assert all(o in held for o in range(base, base + size))

    @invariant()
    def counts_agree(self) -> None:
        states = self.r.states()
        assert self.r.acquired == sum(s is RecordState.ACQUIRED for _, s, _ in states)
        assert all(count <= LIMITS.delivery_limit for _, _, count in states)


def test_share_records_keep_every_record_once() -> None:
    run_state_machine_as_test(
        ShareRecordsMachine,
        settings=settings(
            max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )  # fmt: skip
