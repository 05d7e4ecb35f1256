"""A partition's transaction index (kop/log/txn_index.py) against a model: for any
log of plain batches, transactional batches of several producers and their commit
and abort markers, a `read_committed` consumer that fetches from any offset up to
the last stable offset and skips as Kafka's consumer does (with the fetch's
`aborted_transactions`) sees exactly the committed and non-transactional records,
in offset order; the last stable offset never passes an open transaction; the
same after a snapshot is restored and after retention trimmed the log's start."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from kop.log.txn_index import TxnIndex


@dataclass(frozen=True)
class Batch:
    first: int
    last: int
    producer_id: int
    transactional: bool
    control: bool = False
    commit: bool = False


PIDS = st.sampled_from([1, 2, 3])
events = st.lists(
    st.one_of(
        st.tuples(st.just("plain"), st.integers(1, 3)),
        st.tuples(st.just("txn"), PIDS, st.integers(1, 3)),
        st.tuples(st.just("end"), PIDS, st.booleans()),
    ),
    max_size=40,
)


def build(script: list[tuple[object, ...]]) -> tuple[list[Batch], list[int], int]:
    """The log, the offsets a read_committed reader must see, and the first offset
    of the earliest transaction left open (or the end)."""
    log: list[Batch] = []
    open_txns: dict[int, list[int]] = {}
    visible: list[int] = []
    offset = 0
    for event in script:
        kind = event[0]
        if kind == "plain":
            n = int(event[1])  # type: ignore[call-overload]
            log.append(Batch(offset, offset + n - 1, -1, False))
            visible += range(offset, offset + n)
            offset += n
        elif kind == "txn":
            pid, n = int(event[1]), int(event[2])  # type: ignore[call-overload]
            log.append(Batch(offset, offset + n - 1, pid, True))
            open_txns.setdefault(pid, []).extend(range(offset, offset + n))
            offset += n
        else:
            pid, commit = int(event[1]), bool(event[2])  # type: ignore[call-overload]
            records = open_txns.pop(pid, None)
            if records is None:
                continue  # nothing open: the coordinator writes no marker
            log.append(Batch(offset, offset, pid, True, control=True, commit=commit))
            if commit:
                visible += records
            offset += 1
    stable = min((r[0] for r in open_txns.values()), default=offset)
    return log, sorted(v for v in visible if v < stable), stable


def index_of(log: list[Batch]) -> TxnIndex:
    index = TxnIndex()
    for b in log:
        if b.control:
            index.marker(b.producer_id, b.first, b.commit)
        else:
            index.batch(b.producer_id, b.first, b.transactional)
    return index


def read_committed(log: list[Batch], index: TxnIndex, start: int, end: int) -> list[int]:
    """Kafka's consumer: batches below the last stable offset, skipping a producer's
    transactional batches from an aborted transaction's first offset to its marker."""
    stable = index.last_stable(end)
    pending = sorted(index.aborted(start, stable), key=lambda a: a.first_offset)
    aborting: set[int] = set()
    seen: list[int] = []
    for b in log:
        if b.last < start or b.last >= stable:
            continue
        while pending and pending[0].first_offset <= b.last:
            aborting.add(pending.pop(0).producer_id)
        if b.control:
            if not b.commit:
                aborting.discard(b.producer_id)
        elif not (b.transactional and b.producer_id in aborting):
            seen += [o for o in range(b.first, b.last + 1) if o >= start]
    return seen


@given(script=events, data=st.data())
def test_read_committed_sees_exactly_the_committed_records(
    script: list[tuple[object, ...]], data: st.DataObject
) -> None:
    log, visible, stable = build(script)
    end = log[-1].last + 1 if log else 0
    index = index_of(log)
    assert index.last_stable(end) == stable
    start = data.draw(st.integers(0, max(end, 0)))
    want = [v for v in visible if v >= start]
    assert read_committed(log, index, start, end) == want
    restored = TxnIndex()
    restored.restore(index.snapshot(), end)
    assert read_committed(log, restored, start, end) == want
    index.trim(start)  # retention removed everything below `start`
    assert read_committed(log, index, start, end) == want


def test_an_open_transaction_holds_the_stable_offset_until_its_marker() -> None:
    index = TxnIndex()
    index.batch(7, 10, transactional=True)
    index.batch(-1, 12, transactional=False)
    index.batch(7, 13, transactional=True)
    assert index.last_stable(20) == 10
    index.marker(7, 20, commit=False)
    assert index.last_stable(21) == 21
    (aborted,) = index.aborted(0, 21)
    assert (aborted.producer_id, aborted.first_offset, aborted.last_offset) == (7, 10, 20)
    assert index.aborted(21, 30) == []  # a fetch past the marker needs no entry
