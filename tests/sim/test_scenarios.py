"""The six ways the partition log answered wrongly, lost acknowledged data or hung,
each driven deterministically over the in-memory log (issue 5). Every test here
failed on the log before the rewrite; the comment on each says how."""

from __future__ import annotations

import asyncio
import struct

import crc32c
import pytest

from kop.entries.formats import EntryFormat
from kop.log.partition_log import LogSettings
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import split_batches
from kop.storage import batch_layout
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, Producer, batch
from tests.sim.memory_log import MemoryLog

HISTORY_ONLY = LogSettings(checkpoint_interval=2, tail_buffer_bytes=0, write_timeout_s=5)


def _values(prefix: str, n: int) -> list[bytes | None]:
    return [f"{prefix}{i}".encode() for i in range(n)]


def _expect(start: int, values: list[bytes | None]) -> list[tuple[int, bytes | None]]:
    return [(start + i, v) for i, v in enumerate(values)]


# -- 1. retention --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "wait"),
    [
        # Nothing in memory: the read itself finds its checkpoint's entry gone.
        (HISTORY_ONLY, 0.0),
        # Records still in the tail buffer are served until the retention check runs.
        (LogSettings(checkpoint_interval=3, retention_check_s=30), 31.0),
    ],
)
def test_trimmed_ledgers_move_the_log_start_and_survivors_keep_offsets(
    loop: SimLoop, settings: LogSettings, wait: float
) -> None:
    # Old log: fetch(0) counted the first surviving record as offset 0 and served
    # ledger B's records as offsets 0..4, then again from the tail buffer.
    log = MemoryLog()
    node = Node(loop, log, settings)
    node.start()
    assert node.produce(batch(_values("a", 5))) == 0
    log.topic(TOPIC).roll()
    assert node.produce(batch(_values("b", 5))) == 5
    log.topic(TOPIC).trim(1)
    loop.settle(wait)

    gone = node.fetch(0)
    assert isinstance(gone, KafkaError) and gone.code == ErrorCode.offset_out_of_range
    assert node.partition().log_start == 5
    assert node.fetch(5) == _expect(5, _values("b", 5))
    assert node.fetch(8) == _expect(8, _values("b", 5)[3:])
    assert node.produce(batch([b"c0"])) == 10
    assert node.fetch(5) == _expect(5, [*_values("b", 5), b"c0"])


def test_log_start_follows_a_trim_without_any_fetch(loop: SimLoop) -> None:
    # Old log: the log start stayed at the first checkpoint forever.
    log = MemoryLog()
    node = Node(loop, log, HISTORY_ONLY)
    node.start()
    node.produce(batch(_values("a", 4)))
    log.topic(TOPIC).roll()
    node.produce(batch(_values("b", 3)))
    log.topic(TOPIC).trim(1)
    loop.settle(2 * HISTORY_ONLY.retention_check_s)  # the periodic retention check
    assert node.partition().log_start == 4
    assert node.partition().high_watermark == 7


def test_trim_of_the_ledger_last_written_is_noticed_without_new_writes(loop: SimLoop) -> None:
    # The ledger kop last counted was closed (an unload) and deleted (a truncation):
    # no new message tells kop, the periodic check must.
    log = MemoryLog()
    node = Node(loop, log, LogSettings(retention_check_s=10))
    node.start()
    node.produce(batch(_values("a", 3)))
    log.topic(TOPIC).roll()
    log.topic(TOPIC).trim(1)
    loop.settle(11)
    assert node.partition().log_start == node.partition().high_watermark == 3
    gone = node.fetch(0)
    assert isinstance(gone, KafkaError) and gone.code == ErrorCode.offset_out_of_range
    assert node.produce(batch([b"next"])) == 3


def test_a_partition_opening_after_a_trim_starts_at_the_survivors(loop: SimLoop) -> None:
    log = MemoryLog()
    settings = LogSettings(retention_check_s=3600)
    node = Node(loop, log, settings)
    node.start()
    node.produce(batch(_values("a", 5)))
    log.topic(TOPIC).roll()
    node.produce(batch(_values("b", 5)))
    node.stop()
    log.topic(TOPIC).trim(1)
    again = Node(loop, log, settings)
    again.start()
    assert again.partition().log_start == 5  # at once, not at the next periodic check
    assert again.fetch(5) == _expect(5, _values("b", 5))


# -- 2. offsets never go backwards ----------------------------------------------------


def test_restart_after_the_resume_entry_was_trimmed_keeps_the_high_watermark(
    loop: SimLoop,
) -> None:
    # Old log: counted on from the last checkpoint (offset 0): the high watermark
    # came back as 0 and the next record reused offset 0.
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    assert node.produce(batch(_values("a", 6))) == 0
    node.stop()
    log.topic(TOPIC).roll()
    log.topic(TOPIC).trim(1)

    again = Node(loop, log, LogSettings())
    again.start()
    assert again.partition().high_watermark == 6
    assert again.produce(batch([b"new"])) == 6
    assert again.fetch(6) == [(6, b"new")]
    assert again.partition().log_start == 6


def test_restart_after_a_crash_and_a_trim_keeps_flushed_offsets(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings(checkpoint_interval=4))
    node.start()
    node.produce(batch(_values("a", 6)))
    log.topic(TOPIC).roll()
    node.produce(batch(_values("b", 3)))
    loop.settle(5)  # the flusher runs
    node.crash()
    log.topic(TOPIC).roll()
    log.topic(TOPIC).trim(2)

    again = Node(loop, log, LogSettings(checkpoint_interval=4))
    again.start()
    assert again.partition().high_watermark >= 9
    assert again.produce(batch([b"new"])) == 9


# -- 3. a partly stored idempotent batch ----------------------------------------------


@pytest.mark.parametrize(
    ("batching", "max_entry_bytes"),
    [(False, 4 << 20), (True, 1)],  # an entry per record; a batch split into entries
)
def test_retry_of_a_partly_stored_batch_stores_the_missing_records(
    loop: SimLoop, batching: bool, max_entry_bytes: int
) -> None:
    # Old log: the stamp on the first message marked the whole batch written, so the
    # retry was answered as a duplicate: 3 records acknowledged, 1 stored.
    log = MemoryLog()
    node = Node(loop, log, LogSettings(write_timeout_s=5, max_entry_bytes=max_entry_bytes))
    node.start()
    producer = Producer(pid=7)
    data = batch([b"a", b"b", b"c"], producer)
    node.partition()
    log.topic(TOPIC).persist_next = 1
    first = node.produce(data, batching=batching)
    assert isinstance(first, KafkaError)
    loop.settle(1)
    assert len(log.topic(TOPIC).entries()) == 1
    assert node.produce(data, batching=batching) == 0
    assert node.fetch(0) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert node.produce(data, batching=batching) == 0  # and a further retry is a duplicate
    assert node.partition().high_watermark == 3


# -- 4. retries are answered in bounded time ------------------------------------------


def test_retry_while_the_original_is_in_flight_on_a_dead_connection(loop: SimLoop) -> None:
    # Old log: the retry awaited the original's handle, which only the dead
    # connection would have resolved: it never answered.
    log = MemoryLog()
    settings = LogSettings(write_timeout_s=5)
    node = Node(loop, log, settings)
    node.start()
    producer = Producer(pid=9)
    assert node.produce(batch([b"first"], producer, seq=0)) == 0
    log.writers[TOPIC].stall()
    data = batch([b"second"], producer, seq=1)
    plog = node.partition()

    async def send_and_disconnect() -> None:
        await plog.begin_append(split_batches(data, max_batch_bytes=1 << 20), EntryFormat.PULSAR)

    loop.run(send_and_disconnect(), within=5)
    retry = node.produce(data)  # bounded by the harness: write timeout + 10 s
    assert isinstance(retry, KafkaError) and retry.code in {
        ErrorCode.request_timed_out,
        ErrorCode.not_enough_replicas,
    }
    log.topic(TOPIC).store.writers.get(TOPIC) and log.writers[TOPIC].unstall()
    loop.settle(1)
    assert node.produce(data) == 1
    assert node.fetch(0) == [(0, b"first"), (1, b"second")]


def test_original_completes_after_its_connection_died(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings(write_timeout_s=5))
    node.start()
    producer = Producer(pid=10)
    node.produce(batch([b"warm-up"]))
    log.writers[TOPIC].stall()
    plog = node.partition()
    data = batch([b"x"], producer)

    async def send_and_disconnect() -> None:
        await plog.begin_append(split_batches(data, max_batch_bytes=1 << 20), EntryFormat.PULSAR)

    loop.run(send_and_disconnect(), within=5)
    loop.settle(0.5)
    log.writers[TOPIC].unstall()
    loop.settle(1)
    assert node.produce(data) == 1  # the original was stored: its retry is a duplicate
    assert node.fetch(0) == [(0, b"warm-up"), (1, b"x")]


# -- 5. malformed messages -------------------------------------------------------------


def test_malformed_reserved_properties_never_block_a_partition(loop: SimLoop) -> None:
    # Old log: decoding raised, the tail reader retried that message forever and
    # the partition never opened.
    log = MemoryLog()
    topic = log.topic(TOPIC)

    async def native_writes() -> None:
        messages = [
            OutgoingMessage(b"v0", {"__kafka.ts": "not-a-number"}, "k0", 1_650_000_000_000),
            OutgoingMessage(b"v1", {"__kafka.key": "b64"}, "%%not base64%%", None),
            OutgoingMessage(b"v2", {"__kafka.producer": "1/x"}, None, None),
            OutgoingMessage(b"v3", {"app": "fine"}, "k3", None),
        ]
        # two messages of their own, two in one batch entry
        entries = [OutgoingEntry.of(messages[0]), OutgoingEntry.of(messages[1])]
        topic.append([*entries, batch_layout.entry(messages[2:])], "pulsar-app", 0)

    loop.run(native_writes(), within=1)
    node = Node(loop, log, LogSettings())
    node.start()
    got = node.fetch_records(0)
    assert not isinstance(got, KafkaError)
    assert [(r.offset, r.value) for r in got] == [(0, b"v0"), (1, b"v1"), (2, b"v2"), (3, b"v3")]
    assert got[0].timestamp == 1_650_000_000_000 and got[0].key == b"k0"
    assert ("__kafka.ts", b"not-a-number") in got[0].headers
    assert got[1].key == b"%%not base64%%" and ("__kafka.key", b"b64") in got[1].headers
    assert ("__kafka.producer", b"1/x") in got[2].headers
    assert got[3].headers == (("app", b"fine"),)
    assert node.partition().stats.malformed == 3


# -- 6. a corrupt compressed batch -----------------------------------------------------


def _corrupt(data: bytes) -> bytes:
    """Garble the compressed records but keep a valid CRC (as a buggy client would)."""
    body = bytearray(data)
    for i in range(61, len(body)):
        body[i] ^= 0x5A
    struct.pack_into(">I", body, 17, crc32c.crc32c(bytes(body[21:])))
    return bytes(body)


def test_corrupt_compressed_batch_is_refused_and_leaves_nothing_pending(loop: SimLoop) -> None:
    # Old log: the idempotence handle was registered before decoding failed; the
    # valid retry of the same sequence then waited on it forever.
    log = MemoryLog()
    node = Node(loop, log, LogSettings(write_timeout_s=5))
    node.start()
    producer = Producer(pid=11)
    good = batch([b"x", b"y"], producer, compression=1)
    bad = node.produce(_corrupt(good))
    assert isinstance(bad, KafkaError) and bad.code == ErrorCode.corrupt_message
    assert node.produce(good) == 0
    assert node.fetch(0) == [(0, b"x"), (1, b"y")]


def test_the_sim_loop_is_deterministic() -> None:
    """Two runs of the same steps give the same log, byte for byte."""

    def run() -> list[object]:
        sim = SimLoop()
        log = MemoryLog()
        node = Node(sim, log, LogSettings())
        node.start()
        node.produce(batch(_values("a", 3)))
        sim.run(asyncio.sleep(3), within=5)
        out = [(m.position, m.payload, m.publish_time) for m in log.topic(TOPIC).messages()]
        sim.shutdown()
        return out

    assert run() == run()
