"""The tail budget bounds memory: what a tail buffer counts for an entry must be
what the entry really holds in Python, not its wire size. Small records hold
several times their bytes in objects (a Spark run kept a 256 MiB budget in a
2.4 GiB kop before the buffer counted them right)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

from kop.entries.codec import decode
from kop.log.counting import LogEntry
from kop.log.tail_buffer import TailBudget, TailBuffer
from kop.protocol.records import Record, build_batch
from kop.storage import batch_layout
from kop.storage.types import OutgoingMessage, Position, StoredEntry, StoredMessage

T0 = 1_767_225_600_000
Make = Callable[[int], StoredEntry]


def _props(headers: int, i: int) -> dict[str, str]:
    return {f"header-{h}": f"value-{h}-{i}" for h in range(headers)}


def _pulsar(value: int, key: bool, headers: int, stamped: bool) -> Make:
    """One record per entry (an unbatched topic, or a Pulsar application's sends)."""

    def make(i: int) -> StoredEntry:
        props = _props(headers, i)
        if stamped:
            props["__kafka.producer"] = f"7/0/{i}/5000/{i % 5000}"
        payload = (b"%08d" % i) * (value // 8)
        key_text = f"acct-{i:08d}" if key else ""
        at = Position(3, i, -1)
        msg = StoredMessage(at, payload, False, props, key_text, T0 + i, T0 + i)
        return StoredEntry(at, "p", i, T0 + i, 1, msg)

    return make


def _pulsar_batch(records: int, value: int, headers: int) -> Make:
    """A Kafka batch in the `pulsar` format: one batch entry, stamped once."""

    def make(i: int) -> StoredEntry:
        layout = batch_layout.build(
            [
                OutgoingMessage(
                    (b"%08d" % (i + r)) * (value // 8), _props(headers, r), f"acct-{r}", T0 + r
                )
                for r in range(records)
            ]
        )
        stamp = {"__kafka.producer": f"7/0/{i * records}/{records}/{records - 1}"}
        return StoredEntry(Position(3, i, -1), "p", i, T0, records, None, layout, stamp)

    return make


def _kafka(records: int, value: int) -> Make:
    def make(i: int) -> StoredEntry:
        batch = build_batch(
            [Record(r, T0 + r, None, (b"%08d" % (i + r)) * (value // 8)) for r in range(records)]
        )
        at = Position(3, i, -1)
        msg = StoredMessage(at, batch, False, {"__kafka.entry": "batch"}, "", T0, T0)
        return StoredEntry(at, "p", i, T0, 1, msg)

    return make


SHAPES = {
    "empty pulsar record": _pulsar(0, False, 0, False),
    "spark event (key, 2 headers, idempotent)": _pulsar(112, True, 2, True),
    "1 KiB value": _pulsar(1024, False, 0, False),
    "64 KiB value": _pulsar(65536, True, 1, False),
    "many headers": _pulsar(16, True, 12, False),
    "pulsar batch of 100 spark events": _pulsar_batch(100, 112, 2),
    "pulsar batch of 10 empty records": _pulsar_batch(10, 0, 0),
    "kafka batch of 100 small records": _kafka(100, 16),
    "kafka batch of 5 large records": _kafka(5, 20_000),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_tail_buffer_counts_what_its_entries_hold(shape: str) -> None:
    make, n = SHAPES[shape], 3000
    budget = TailBudget(1 << 40)
    buffer = TailBuffer(budget)
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        offset = 0
        for i in range(n):
            msg = make(i)  # what the tail reader hands over; only the entry stays
            entry = decode(msg, offset)
            buffer.append(LogEntry(offset, msg.position, entry))
            offset += entry.count
        del msg, entry
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    real = held - base
    assert 0.75 <= buffer.bytes / real <= 1.33, (
        f"{shape}: the buffer counts {buffer.bytes / n:.0f} B per entry, "
        f"its entries hold {real / n:.0f} B"
    )
    assert budget.used == buffer.bytes
