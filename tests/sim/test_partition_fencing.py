"""Two kop instances that both believe they own one partition (their views of who is
alive differ for a moment): the one that writes last fences the other, whose writes
then fail NOT_LEADER_OR_FOLLOWER and which does not take the partition back until its
view changes. Whatever either had acknowledged keeps its offset, and offsets stay a
pure function of the log, also for the fenced one's last write in flight."""

from __future__ import annotations

import asyncio

from kop.entries.formats import EntryFormat
from kop.log.partition_log import LogSettings
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader, split_batches
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, Producer, batch
from tests.sim.memory_log import MemoryLog

SETTINGS = LogSettings(write_timeout_s=5)
FMT = EntryFormat.PULSAR


def _batches(data: bytes) -> list[tuple[BatchHeader, bytes]]:
    return split_batches(data, max_batch_bytes=1 << 20)


def _node(loop: SimLoop, storage: MemoryLog, view: list[int]) -> Node:
    node = Node(loop, storage, SETTINGS)
    node.start()
    assert node.manager is not None
    node.manager._view = lambda: view[0]  # the ownership view's version, as the test moves it
    return node


def test_the_instance_that_writes_last_fences_the_other(loop: SimLoop) -> None:
    store = MemoryLog()
    a_view, b_view = [0], [0]
    a = _node(loop, store.instance(), a_view)
    b = _node(loop, store.instance(), b_view)
    assert a.produce(batch([b"a0", b"a1"])) == 0
    assert b.produce(batch([b"b0"])) == 2  # takes the partition: A is fenced
    refused = a.produce(batch([b"a2"]))
    assert isinstance(refused, KafkaError) and refused.code is ErrorCode.not_leader_or_follower
    again = a.produce(batch([b"a3"]))  # and stays away: taking it back would fence B
    assert isinstance(again, KafkaError) and again.code is ErrorCode.not_leader_or_follower
    assert b.produce(batch([b"b1"])) == 3
    assert b.fetch(0) == [(0, b"a0"), (1, b"a1"), (2, b"b0"), (3, b"b1")]
    a_view[0] += 1  # A's view changed (it now agrees B owns it, or owns it again itself)
    assert a.produce(batch([b"a4"])) == 4  # it may try again, and fences B in turn
    refused = b.produce(batch([b"b2"]))
    assert isinstance(refused, KafkaError) and refused.code is ErrorCode.not_leader_or_follower


def test_a_write_in_flight_at_the_takeover_is_counted_before_the_new_owners(
    loop: SimLoop,
) -> None:
    """The fenced instance's last write, handed to the storage before the fence, lands
    before the new owner's first entry (Pulsar's order): the new owner's offsets come
    after it; the old owner's client never learns its offset and retries."""
    store = MemoryLog()
    a = _node(loop, store.instance(), [0])
    b = _node(loop, store.instance(), [0])
    assert a.produce(batch([b"a0"])) == 0
    store.topic(TOPIC).hold_next = True
    lost = a.produce_stream([batch([b"a1"])], between=lambda _i: None)
    assert isinstance(lost[0], KafkaError)  # its receipt never came: not acknowledged
    assert b.produce(batch([b"b0"])) == 2
    assert b.fetch(0) == [(0, b"a0"), (1, b"a1"), (2, b"b0")]


def test_a_retry_at_the_new_owner_of_a_batch_the_old_one_stored_is_not_stored_twice(
    loop: SimLoop,
) -> None:
    """The old owner stored an idempotent batch, but its client never heard (the
    instance died) and retries at the new owner, which had opened the partition
    before and has not read that entry yet (its reader lags). Once its fence is up,
    nothing more can land from the old owner: the new owner reads to the log's end
    before it judges the retry, finds the batch, and answers its offset."""
    store = MemoryLog()
    a = _node(loop, store.instance(), [0])
    slow = store.instance()
    b = _node(loop, slow, [0])
    assert b.fetch(0) == []  # b serves the partition already
    slow.read_lag_s = 1.0
    p = Producer(pid=7)
    assert a.produce(batch([b"x0", b"x1"], p, seq=0)) == 0
    assert b.produce(batch([b"x0", b"x1"], p, seq=0)) == 0  # the retry: a duplicate
    assert b.produce(batch([b"x2"], p, seq=2)) == 2
    slow.read_lag_s = 0.0
    assert b.fetch(0) == [(0, b"x0"), (1, b"x1"), (2, b"x2")]


def test_an_instance_that_missed_a_takeover_sends_the_client_away_not_out_of_order(
    loop: SimLoop,
) -> None:
    """A was frozen while B served the partition (the producer's sequences 1-3 went to
    B). Woken, A still believes it owns the partition and gets the next batch (4)
    before its view changes. A sequence gap is fatal to the client's producer: A
    answers it only after reading the log to its end, where B's batches close the
    gap, and its write is then refused by B's fence: NOT_LEADER_OR_FOLLOWER, retriable."""
    store = MemoryLog()
    slow = store.instance()
    a = _node(loop, slow, [0])
    b = _node(loop, store.instance(), [0])
    p = Producer(pid=9)
    assert a.produce(batch([b"s0"], p, seq=0)) == 0
    slow.read_lag_s = 1.0  # A hears of B's writes late (it was frozen)
    for seq in (1, 2, 3):
        assert b.produce(batch([f"s{seq}".encode()], p, seq=seq)) == seq
    sent_away = a.produce(batch([b"s4"], p, seq=4))
    assert isinstance(sent_away, KafkaError), sent_away
    assert sent_away.code is ErrorCode.not_leader_or_follower
    assert b.produce(batch([b"s4"], p, seq=4)) == 4


def test_a_write_in_flight_at_a_handover_is_answered_by_the_old_owner_not_stored_twice(
    loop: SimLoop,
) -> None:
    """D15's handover window. A hands the partition over (its view changed, or it is
    stopping) while Pulsar has taken an idempotent batch of A's but not stored it yet.
    B's fence is up before the batch lands, so B's read to the log's end misses it
    (F3 of docs/design/several-instances.md); the batch is stored before B's first
    entry and acknowledged to A (F2). Had A answered the client an error when it let
    go, the client would retry at B, which judges the retry before its lagging
    reader counted the original: the batch stored twice. A lets its writes in flight
    finish before it closes the partition, so it answers their offsets."""
    store = MemoryLog()
    a = _node(loop, store.instance(), [0])
    slow = store.instance()
    b = _node(loop, slow, [0])
    assert b.fetch(0) == []  # B serves the partition already
    p, other = Producer(pid=7), Producer(pid=8)
    assert a.produce(batch([b"x0"], p, seq=0)) == 0
    a_log, b_log = a.partition(), b.partition()
    assert a.manager is not None
    manager = a.manager
    slow.read_lag_s = 1.0  # B counts others' entries late

    async def handover() -> int | KafkaError:
        store.topic(TOPIC).hold_next = True  # taken by Pulsar, stored at the next fence
        answer = await a_log.begin_append(_batches(batch([b"x1"], p, seq=1)), FMT)
        await asyncio.sleep(0.005)  # Pulsar has it
        letting_go = asyncio.ensure_future(manager.release([TOPIC]))
        await asyncio.sleep(0.001)
        fenced = await b_log.begin_append(_batches(batch([b"y0"], other, seq=0)), FMT)
        try:
            got: int | KafkaError = await answer
        except (KafkaError, asyncio.CancelledError) as exc:
            got = exc if isinstance(exc, KafkaError) else KafkaError(ErrorCode.unknown_server_error)
        if isinstance(got, KafkaError):  # the client retries at the new owner
            try:
                got = await (await b_log.begin_append(_batches(batch([b"x1"], p, seq=1)), FMT))
            except KafkaError as exc:
                got = exc
        await fenced
        await letting_go
        return got

    assert loop.run(handover(), within=30) == 1
    slow.read_lag_s = 0.0
    assert b.fetch(0) == [(0, b"x0"), (1, b"x1"), (2, b"y0")]


def test_a_partition_handed_over_leaves_its_writer_for_the_next_owners_fence(
    loop: SimLoop,
) -> None:
    """A partition released for its next owner is not closed on the storage: its
    writer, with everything it acknowledged stored, stays attached until the next
    owner's fence drops it. On Pulsar 4.0.7 the old owner's CloseProducer, arriving
    while the new owner fenced, deadlocked the broker (a rolling restart hung the
    standalone: docs/decisions.md D28)."""
    store = MemoryLog()
    a = _node(loop, store.instance(), [0])
    b = _node(loop, store.instance(), [0])
    assert a.produce(batch([b"a0", b"a1"])) == 0
    assert a.manager is not None
    loop.run(a.manager.release([TOPIC]), within=60)
    topic = store.topic(TOPIC)
    assert [w.name for w in topic.attached] != [], "the old owner's writer was closed"
    left = list(topic.attached)
    assert b.produce(batch([b"b0"])) == 2  # the new owner's fence drops it
    assert all(w.fenced is not None for w in left)
    assert b.fetch(0) == [(0, b"a0"), (1, b"a1"), (2, b"b0")]
