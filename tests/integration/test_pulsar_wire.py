"""kop's own Pulsar binary-protocol client (kop/pulsar/wire) against the real broker:
what it writes is what Pulsar's own client reads, message for message; what Pulsar's
client writes (batched, compressed) it reads back as whole entries; positions,
inclusive starts, compaction, topic unloads and oversized entries behave."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pulsar
import pytest

from kop.pulsar.wire import PulsarWireError, RawEntry, WireClient, WireReader, pb
from tests.integration.conftest import PULSAR_URL
from tests.integration.observe import dedup_namespace, pulsar_rest, unload

_SIZE = struct.Struct(">I")


@dataclass(frozen=True)
class Topic:
    namespace: str
    local: str  # the partitioned topic's local name

    @property
    def partition0(self) -> str:
        return f"persistent://{self.namespace}/{self.local}-partition-0"


@pytest.fixture(scope="module")
def namespace(pulsar: str) -> Iterator[str]:
    with dedup_namespace("wire") as ns:
        yield ns


@pytest.fixture
def topic(namespace: str) -> Topic:
    local = f"w-{uuid.uuid4().hex[:12]}"
    pulsar_rest("PUT", f"persistent/{namespace}/{local}/partitions", 1)
    return Topic(namespace, local)


@pytest.fixture
async def client(pulsar: str) -> AsyncIterator[WireClient]:
    wire = WireClient(PULSAR_URL, operation_timeout_s=10.0)
    yield wire
    await wire.close()


# -- Pulsar's batch layout, built and parsed here with the generated schema ---------


def build_batch(messages: list[tuple[pb.SingleMessageMetadata, bytes]]) -> bytes:
    out = bytearray()
    for meta, payload in messages:
        meta.payload_size = len(payload)
        raw = meta.SerializeToString()
        out += _SIZE.pack(len(raw)) + raw + payload
    return bytes(out)


def parse_batch(payload: bytes, count: int) -> list[tuple[pb.SingleMessageMetadata, bytes]]:
    out, at = [], 0
    for _ in range(count):
        (size,) = _SIZE.unpack_from(payload, at)
        meta = pb.SingleMessageMetadata.FromString(payload[at + 4 : at + 4 + size])
        at += 4 + size
        out.append((meta, payload[at : at + meta.payload_size]))
        at += meta.payload_size
    assert at == len(payload)
    return out


def messages_of(entry: RawEntry) -> list[tuple[dict[str, str], str, bytes]]:
    """(properties, partition key, payload) of each message of an entry."""
    md = entry.metadata
    if md.HasField("num_messages_in_batch"):
        return [
            ({kv.key: kv.value for kv in m.properties}, m.partition_key, data)
            for m, data in parse_batch(entry.payload, md.num_messages_in_batch)
        ]
    return [({kv.key: kv.value for kv in md.properties}, md.partition_key, entry.payload)]


async def read_all(reader: WireReader, timeout: float = 30.0) -> list[RawEntry]:
    """Everything up to what the broker has now."""
    out = []
    async with asyncio.timeout(timeout):
        while await reader.has_message_available():
            out.append(await reader.read())
    return out


def pulsar_read(topic: str, count: int) -> list[pulsar.Message]:
    """`count` messages from the start, with Pulsar's own client (blocking: run it in
    a thread)."""
    native = pulsar.Client(PULSAR_URL)
    try:
        reader = native.create_reader(topic, pulsar.MessageId.earliest)
        out = [reader.read_next(10_000) for _ in range(count)]
        with contextlib.suppress(Exception):
            extra = reader.read_next(300)
            raise AssertionError(f"more than {count} messages: {extra}")
        return out
    finally:
        native.close()


# -- what we write, Pulsar's client reads ---------------------------------------------


async def test_pulsar_client_reads_single_message_entries(client: WireClient, topic: Topic) -> None:
    producer = await client.create_producer(topic.partition0)
    assert producer.next_sequence_id == 0
    first = pb.MessageMetadata(
        partition_key="user-1",
        event_time=1_700_000_000_123,
        properties=[pb.KeyValue(key="trace", value="abc"), pb.KeyValue(key="n", value="1")],
        uncompressed_size=5,
    )
    tombstone = pb.MessageMetadata(partition_key="user-2", null_value=True)
    receipts = await asyncio.gather(producer.send(first, b"hello"), producer.send(tombstone, b""))
    assert producer.next_sequence_id == 2
    assert first.sequence_id == 0 and tombstone.sequence_id == 1
    assert first.producer_name == producer.name != ""
    assert receipts[0][0] >= 0 and receipts[1] == (receipts[0][0], receipts[0][1] + 1)

    one, two = await asyncio.to_thread(pulsar_read, topic.partition0, 2)
    assert one.data() == b"hello" and one.partition_key() == "user-1"
    assert one.properties() == {"trace": "abc", "n": "1"}
    assert one.event_timestamp() == 1_700_000_000_123
    assert one.producer_name() == producer.name
    assert (one.message_id().ledger_id(), one.message_id().entry_id()) == receipts[0]
    assert two.has_null_value() and two.partition_key() == "user-2"


async def test_pulsar_client_reads_a_batch_entry_as_its_messages(
    client: WireClient, topic: Topic
) -> None:
    producer = await client.create_producer(topic.partition0)
    messages = []
    for i in range(7):
        meta = pb.SingleMessageMetadata(
            partition_key=f"key-{i}",
            event_time=1_700_000_000_000 + i,
            properties=[pb.KeyValue(key="i", value=str(i))],
        )
        if i == 3:
            meta.null_value = True
        messages.append((meta, b"" if i == 3 else f"value-{i}".encode()))
    payload = build_batch(messages)
    metadata = pb.MessageMetadata(num_messages_in_batch=7, uncompressed_size=len(payload))
    ledger, entry = await producer.send(metadata, payload)

    got = await asyncio.to_thread(pulsar_read, topic.partition0, 7)
    for i, msg in enumerate(got):
        mid = msg.message_id()
        assert (mid.ledger_id(), mid.entry_id(), mid.batch_index()) == (ledger, entry, i)
        assert msg.partition_key() == f"key-{i}"
        assert msg.event_timestamp() == 1_700_000_000_000 + i
        assert msg.properties() == {"i": str(i)}
        if i == 3:
            assert msg.has_null_value()
        else:
            assert msg.data() == f"value-{i}".encode() and not msg.has_null_value()

    # and our reader hands it back as one entry
    reader = await client.create_reader(topic.partition0, None)
    (raw,) = await read_all(reader)
    assert (raw.ledger, raw.entry) == (ledger, entry)
    assert raw.metadata.num_messages_in_batch == 7 and raw.payload == payload


# -- what Pulsar's client writes, we read --------------------------------------------


def _native_write(topic: str, compression: pulsar.CompressionType, batched: bool) -> None:
    native = pulsar.Client(PULSAR_URL)
    try:
        producer = native.create_producer(
            topic,
            compression_type=compression,
            batching_enabled=batched,
            batching_max_messages=5,
            batching_max_publish_delay_ms=1000,
        )
        for i in range(10):
            producer.send_async(
                (f"value-{i}-" * 50).encode(),
                None,
                properties={"i": str(i)},
                partition_key=f"key-{i}",
            )
        producer.flush()
        producer.close()
    finally:
        native.close()


@pytest.mark.parametrize(
    ("compression", "codec"),
    [
        (pulsar.CompressionType.NONE, pb.NONE),
        (pulsar.CompressionType.LZ4, pb.LZ4),
        (pulsar.CompressionType.ZLib, pb.ZLIB),
        (pulsar.CompressionType.ZSTD, pb.ZSTD),
        (pulsar.CompressionType.SNAPPY, pb.SNAPPY),
    ],
)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
async def test_reader_reads_what_pulsar_client_wrote(
    client: WireClient,
    topic: Topic,
    compression: pulsar.CompressionType,
    codec: pb.CompressionType,
    batched: bool,
) -> None:
    await asyncio.to_thread(_native_write, topic.partition0, compression, batched)
    reader = await client.create_reader(topic.partition0, None)
    entries = await read_all(reader)
    assert len(entries) == (2 if batched else 10)  # batches of 5
    assert all(e.metadata.compression == codec for e in entries)
    if codec != pb.NONE:  # (Pulsar's clients set the size only when they compress)
        assert all(len(e.payload) == e.metadata.uncompressed_size for e in entries)
    assert [(e.ledger, e.entry) for e in entries] == sorted({(e.ledger, e.entry) for e in entries})
    got = [m for e in entries for m in messages_of(e)]
    assert got == [({"i": str(i)}, f"key-{i}", (f"value-{i}-" * 50).encode()) for i in range(10)]
    await reader.close()


# -- positions --------------------------------------------------------------------------


async def _write(
    producer_topic: str, client: WireClient, n: int, first: int = 0
) -> list[tuple[int, int]]:
    producer = await client.create_producer(producer_topic)
    futures = [
        producer.send(pb.MessageMetadata(), f"entry-{i}".encode()) for i in range(first, first + n)
    ]
    receipts = await asyncio.gather(*futures)
    await producer.close()
    return list(receipts)


async def test_receipts_increase_and_readers_start_inclusively(
    client: WireClient, topic: Topic
) -> None:
    empty = await client.create_reader(topic.partition0, None)
    assert not await empty.has_message_available()

    receipts = await _write(topic.partition0, client, 5)
    await asyncio.to_thread(unload, topic.local, topic.namespace)  # a second ledger
    receipts += await _write(topic.partition0, client, 5, first=5)
    assert receipts == sorted(receipts) and len(set(receipts)) == 10
    assert receipts[4][0] < receipts[5][0], "the unload should have started a new ledger"

    assert await empty.has_message_available()
    everything = await read_all(empty)
    assert [(e.ledger, e.entry) for e in everything] == receipts
    assert [e.payload for e in everything] == [f"entry-{i}".encode() for i in range(10)]
    assert [e.metadata.sequence_id for e in everything] == [0, 1, 2, 3, 4] * 2
    assert not await empty.has_message_available()

    for at in (0, 3, 4, 5, 9):
        reader = await client.create_reader(topic.partition0, receipts[at])
        got = await read_all(reader)
        assert [(e.ledger, e.entry) for e in got] == receipts[at:], f"start at {receipts[at]}"
        await reader.close()
        with pytest.raises(PulsarWireError, match="closed") as caught:
            await reader.read()
        assert not caught.value.retriable

    # past the last entry of a closed ledger: the next ledger's first entry
    ledger, entry = receipts[4]
    reader = await client.create_reader(topic.partition0, (ledger, entry + 1))
    assert [(e.ledger, e.entry) for e in await read_all(reader)] == receipts[5:]
    # past the end: nothing yet, then what comes next
    ledger, entry = receipts[-1]
    tail = await client.create_reader(topic.partition0, (ledger, entry + 1))
    assert not await tail.has_message_available()
    (more,) = await _write(topic.partition0, client, 1)
    async with asyncio.timeout(10):
        next_entry = await tail.read()
    assert (next_entry.ledger, next_entry.entry) == more


async def test_compacted_read_sees_the_latest_value_per_key(
    client: WireClient, topic: Topic
) -> None:
    producer = await client.create_producer(topic.partition0)
    writes = [("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("b", "2")]
    receipts = await asyncio.gather(
        *(producer.send(pb.MessageMetadata(partition_key=k), v.encode()) for k, v in writes)
    )
    path = f"persistent/{topic.namespace}/{topic.local}-partition-0/compaction"
    await asyncio.to_thread(pulsar_rest, "PUT", path)
    deadline = time.monotonic() + 60
    while (status := await asyncio.to_thread(pulsar_rest, "GET", path))["status"] != "SUCCESS":
        assert status["status"] in ("RUNNING", "NOT_RUN"), status
        assert time.monotonic() < deadline, f"compaction not done in 60s: {status}"
        await asyncio.sleep(0.2)

    compacted = await client.create_reader(topic.partition0, None, compacted=True)
    got = await read_all(compacted)
    assert [(e.metadata.partition_key, e.payload) for e in got] == [
        ("a", b"2"),
        ("c", b"1"),
        ("b", b"2"),
    ]
    assert [(e.ledger, e.entry) for e in got] == [receipts[2], receipts[3], receipts[4]]
    full = await client.create_reader(topic.partition0, None)
    assert len(await read_all(full)) == 5


# -- reconnects ------------------------------------------------------------------------


def _drop_connections(client: WireClient) -> None:
    """What a network failure looks like to the client: its sockets just end."""
    for conn in list(client._session.pool._connections.values()):
        assert conn._transport is not None
        conn._transport.abort()


@pytest.mark.parametrize("disruption", ["unload", "connection drop"])
async def test_disruptions_during_a_stream_lose_and_duplicate_nothing(
    client: WireClient, topic: Topic, disruption: str
) -> None:
    """Topic unloads (the broker closes our producer and consumer) or dropped
    connections, several times while a producer sends and a reader reads a few
    thousand entries. Deduplication is on in the namespace (the fixture), as kop sets
    it up: every entry is stored once and read once, in order, and no send fails."""
    total = 3000
    producer = await client.create_producer(topic.partition0, max_pending_bytes=256 * 1024)
    reader = await client.create_reader(topic.partition0, None, receiver_queue=200)
    disrupted = asyncio.Event()

    async def disrupt_repeatedly() -> None:
        for _ in range(5):
            await asyncio.sleep(0.4)
            if disruption == "unload":
                await asyncio.to_thread(unload, topic.local, topic.namespace)
            else:
                _drop_connections(client)
        disrupted.set()

    async def produce() -> list[tuple[int, int]]:
        futures = []
        for i in range(total):
            payload = f"entry-{i:05d}".encode() * 20
            await producer.wait_for_room(len(payload))
            futures.append(producer.send(pb.MessageMetadata(), payload))
            if i % 50 == 49 and not disrupted.is_set():
                await asyncio.sleep(0.03)  # stretch the stream over the disruptions
        return list(await asyncio.gather(*futures))  # raises if any send failed

    async def consume() -> list[RawEntry]:
        return [await reader.read() for _ in range(total)]

    async with asyncio.timeout(120):
        disrupting = asyncio.create_task(disrupt_repeatedly())
        receipts, entries = await asyncio.gather(produce(), consume())
        await disrupting

    expected = [f"entry-{i:05d}".encode() * 20 for i in range(total)]
    assert [e.payload for e in entries] == expected  # each read once, in order
    assert [e.metadata.sequence_id for e in entries] == list(range(total))
    stored = [r for r in receipts if r != (-1, -1)]
    assert stored == sorted(stored) and len(set(stored)) == len(stored)
    positions = [(e.ledger, e.entry) for e in entries]
    assert positions == sorted(positions) and set(stored) <= set(positions)
    # every entry stored once: a fresh reader finds exactly `total`
    fresh = await client.create_reader(topic.partition0, None)
    again = await read_all(fresh, timeout=60)
    assert [e.payload for e in again] == expected
    if disruption == "unload":
        ledgers = {e.ledger for e in again}
        assert len(ledgers) >= 3, f"expected the unloads to roll ledgers, got {ledgers}"


async def test_a_lost_receipt_is_settled_by_the_brokers_deduplication(
    client: WireClient, topic: Topic
) -> None:
    """The first receipt is lost, the second arrives: the producer closes its
    connection and sends both again on a new one, and the broker answers each as a
    duplicate (-1:-1, Pulsar 4's MessageDeduplication): stored once, reported stored."""
    producer = await client.create_producer(topic.partition0)
    receive = producer.on_receipt
    lost: list[int] = []

    def lose_the_first(receipt: pb.CommandSendReceipt) -> None:
        if not lost:
            lost.append(receipt.sequence_id)
            return
        receive(receipt)

    producer.on_receipt = lose_the_first  # type: ignore[method-assign]
    first = producer._link.conn
    async with asyncio.timeout(30):
        sent = [producer.send(pb.MessageMetadata(), b"entry-%d" % i) for i in range(2)]
        assert await asyncio.gather(*sent) == [(-1, -1), (-1, -1)]
    assert lost == [0]
    assert first is not None and first.is_closed  # not re-created on it
    reader = await client.create_reader(topic.partition0, None)
    entries = await read_all(reader)
    assert [(e.metadata.sequence_id, e.payload) for e in entries] == [
        (0, b"entry-0"),
        (1, b"entry-1"),
    ]


async def test_keepalive_keeps_an_idle_connection(pulsar: str, topic: Topic) -> None:
    """PINGs every 0.2 s, each answered well within the 2 s timeout: the connection
    stays (and the broker's own PINGs get our PONGs)."""
    wire = WireClient(PULSAR_URL, operation_timeout_s=2.0, keepalive_s=0.2)
    try:
        reader = await wire.create_reader(topic.partition0, None)
        (conn,) = wire._session.pool._connections.values()
        await asyncio.sleep(3.0)
        assert not conn.is_closed and reader.is_connected
        assert not await reader.has_message_available()
    finally:
        await wire.close()


# -- limits ------------------------------------------------------------------------------


async def test_an_entry_over_max_message_size_fails_for_good_and_the_producer_goes_on(
    client: WireClient, topic: Topic
) -> None:
    producer = await client.create_producer(topic.partition0)
    before = await producer.send(pb.MessageMetadata(), b"small")
    too_big = producer.send(pb.MessageMetadata(), bytes(5 * 1024 * 1024 + 1))
    with pytest.raises(PulsarWireError) as caught:
        await too_big
    assert not caught.value.retriable
    after = await producer.send(pb.MessageMetadata(), zlib.compress(b"x" * 1000))
    assert after == (before[0], before[1] + 1)
    reader = await client.create_reader(topic.partition0, None)
    assert [e.metadata.sequence_id for e in await read_all(reader)] == [0, 1]
