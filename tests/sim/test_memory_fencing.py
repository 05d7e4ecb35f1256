"""The in-memory storage holds topics as Pulsar's producer access modes do (the facts
of docs/design/several-instances.md, section 1), so that ownership can be proven over
it: a fencing writer fails every other one for good, whatever they had handed over is
stored before its own entries, epochs grow, a named writer continues its name's
sequence ids, and another instance's view shares the topics but not the writers."""

from __future__ import annotations

import asyncio

import pytest

from kop.storage.types import (
    OutgoingEntry,
    OutgoingMessage,
    StoredEntry,
    WriterBusy,
    WriterFenced,
    WriterMode,
)
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog, MemoryWriter

TOPIC = "persistent://public/default/t-partition-0"


def _entry(value: bytes) -> OutgoingEntry:
    return OutgoingEntry.of(OutgoingMessage(value, {}, None, None))


def _send(loop: SimLoop, w: MemoryWriter, value: bytes) -> asyncio.Future[list[StoredEntry | None]]:
    """Hand one entry to the writer (on the loop, as the log does); its future."""

    async def go() -> asyncio.Future[list[StoredEntry | None]]:
        return w.send_all([_entry(value)])[1]

    return loop.run(go(), within=5)


def _values(log: MemoryLog) -> list[bytes]:
    return [m.payload for m in log.topic(TOPIC).messages()]


def test_a_fencing_writer_fails_the_holder_after_storing_what_it_handed_over(
    loop: SimLoop,
) -> None:
    log = MemoryLog()
    old = loop.run(log.writer(TOPIC, mode=WriterMode.FENCING, name="kop"), within=5)
    assert old.epoch == 0
    loop.run(_send(loop, old, b"a"), within=5)
    log.topic(TOPIC).hold_next = True
    held = _send(loop, old, b"b")  # taken by the broker, its receipt late
    loop.run(asyncio.sleep(0.01), within=5)
    old.stall()
    queued = _send(loop, old, b"c")  # not yet taken

    other = log.instance()
    new = loop.run(other.writer(TOPIC, mode=WriterMode.FENCING, name="kop"), within=5)
    assert new.epoch == 1
    assert new.resumed_after == 1  # "a" and the held "b" were taken under the name
    loop.run(_send(loop, new, b"d"), within=5)

    with pytest.raises(WriterFenced):
        loop.run(queued, within=5)
    with pytest.raises(WriterFenced):
        loop.run(_send(loop, old, b"e"), within=5)
    assert _values(log) == [b"a", b"b", b"d"]  # the fenced writer's all precede the new one's
    seqs = [e.sequence_id for e in log.topic(TOPIC).entries()]
    assert seqs == [0, 1, 2]  # one numbering under the name, across both holders
    with pytest.raises(Exception):  # noqa: B017 - its receipt is lost either way
        loop.run(held, within=60)


def test_exclusive_and_shared_writers_are_refused_while_the_topic_is_held(
    loop: SimLoop,
) -> None:
    log = MemoryLog()
    holder = loop.run(log.writer(TOPIC, mode=WriterMode.EXCLUSIVE), within=5)
    assert holder.epoch == 0
    for mode in (WriterMode.EXCLUSIVE, WriterMode.SHARED):
        with pytest.raises(WriterBusy):
            loop.run(log.instance().writer(TOPIC, mode=mode), within=5)
    loop.run(log.close_writer(TOPIC), within=5)
    again = loop.run(log.instance().writer(TOPIC, mode=WriterMode.EXCLUSIVE), within=5)
    assert again.epoch == 1


def test_an_exclusive_writer_is_refused_beside_a_shared_one(loop: SimLoop) -> None:
    log = MemoryLog()
    shared = loop.run(log.writer(TOPIC), within=5)
    assert shared.epoch == -1
    with pytest.raises(WriterBusy):
        loop.run(log.instance().writer(TOPIC, mode=WriterMode.EXCLUSIVE), within=5)
    fencer = loop.run(log.instance().writer(TOPIC, mode=WriterMode.FENCING), within=5)
    with pytest.raises(WriterFenced):
        loop.run(_send(loop, shared, b"x"), within=5)
    loop.run(_send(loop, fencer, b"y"), within=5)
    assert _values(log) == [b"y"]


def test_an_instance_cut_off_fails_alone(loop: SimLoop) -> None:
    log = MemoryLog()
    other = log.instance()
    cut = loop.run(log.writer(TOPIC), within=5)
    fine = loop.run(other.writer(TOPIC), within=5)
    log.cut_off(True)
    failing = _send(loop, cut, b"lost")
    loop.run(_send(loop, fine, b"kept"), within=5)
    with pytest.raises(Exception):  # noqa: B017 - a timeout, as an unreachable broker gives
        loop.run(failing, within=60)
    assert _values(log) == [b"kept"]
