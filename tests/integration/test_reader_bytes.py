"""kop's Pulsar readers against the real broker (issue 19): read-ahead is bounded in
bytes across readers, not by a message count per reader; chunked messages from native
producers reach Kafka consumers whole, one offset each."""

from __future__ import annotations

import asyncio
import contextlib
import random
import urllib.error
import uuid
from collections.abc import Iterator

import pulsar
import pytest

from kop.pulsar.wire import WireClient, pb
from kop.pulsar.wire.read_ahead import FRAME_OVERHEAD
from tests.integration.admin import create_topic
from tests.integration.clients import kp_consume
from tests.integration.conftest import PULSAR_URL, KopProcess
from tests.integration.observe import pulsar_rest, unload

MiB = 1 << 20


@pytest.fixture(scope="module")
def namespace(pulsar: str) -> Iterator[str]:
    ns = f"public/rbytes-{uuid.uuid4().hex[:10]}"
    pulsar_rest("PUT", f"namespaces/{ns}", {})
    yield ns
    with contextlib.suppress(urllib.error.URLError):
        for name in pulsar_rest("GET", f"persistent/{ns}") or []:
            local = name.rsplit("/", 1)[1]
            pulsar_rest("DELETE", f"persistent/{ns}/{local}?force=true")
        pulsar_rest("DELETE", f"namespaces/{ns}")


@pytest.fixture
def wire_topic(namespace: str) -> str:
    return f"persistent://{namespace}/t-{uuid.uuid4().hex[:12]}"


async def test_a_reader_of_1_mib_entries_holds_the_budget_not_its_queue(wire_topic: str) -> None:
    topic = wire_topic
    """Before: 1,000 permits of 1 MiB entries, all 120 entries fetched at once (120 MiB
    held for a consumer that had read none). Now: the 16 MiB budget plus one entry."""
    client = WireClient(PULSAR_URL, read_ahead_bytes=16 * MiB)
    try:
        producer = await client.create_producer(topic)
        sends = [producer.send(pb.MessageMetadata(), bytes([i]) * MiB) for i in range(120)]
        await asyncio.gather(*sends)
        await producer.close()
        budget = client.read_ahead
        reader = await client.create_reader(topic, None, receiver_queue=1000)
        async with asyncio.timeout(30):  # it fetches ahead up to the budget...
            while budget.held < budget.limit - 2 * MiB:
                await asyncio.sleep(0.01)
        for i in range(120):  # ...and never past it while the consumer catches up
            raw = await asyncio.wait_for(reader.read(), 30)
            assert raw.payload[:1] == bytes([i]) and len(raw.payload) == MiB
        print(f"\npeak read-ahead held: {budget.peak_held / MiB:.1f} MiB (budget 16 MiB)")
        assert budget.peak_held <= budget.limit + MiB + FRAME_OVERHEAD
        await reader.close()
        assert (budget.held, budget.reserved) == (0, 0)
    finally:
        await client.close()


# -- chunked messages -------------------------------------------------------------------


def _native_writes(topic: str) -> list[bytes]:
    """Small messages around two chunked ones (a new ledger starting at the first),
    written by the official client with chunking on; the values, in order."""
    partition = f"persistent://public/default/{topic}-partition-0"
    big = bytes(range(256)) * (48 << 12)  # 12 MiB: three chunks of the broker's 5 MiB
    # Compressed first, then cut: 6 MiB that LZ4 cannot shrink keep it over 5 MiB.
    packed = random.Random(7).randbytes(6 << 20) + b"k" * (6 << 20)
    client = pulsar.Client(PULSAR_URL, operation_timeout_seconds=60)
    try:
        plain = client.create_producer(
            partition, chunking_enabled=True, batching_enabled=False, send_timeout_millis=120_000
        )
        lz4 = client.create_producer(
            partition,
            chunking_enabled=True,
            batching_enabled=False,
            compression_type=pulsar.CompressionType.LZ4,
            send_timeout_millis=120_000,
        )
        plain.send(b"s0")
        plain.send(b"s1")
        unload(topic)
        plain.send(big, partition_key="big")
        plain.send(b"s2")
        lz4.send(packed)
        lz4.send(b"s3")
    finally:
        client.close()
    return [b"s0", b"s1", big, b"s2", packed, b"s3"]


def test_kafka_consumers_read_chunked_messages_whole_with_dense_offsets(
    fresh_kop: KopProcess, topic: str
) -> None:
    create_topic(fresh_kop.bootstrap, topic)
    values = _native_writes(topic)
    got = kp_consume(fresh_kop.bootstrap, topic, 6)
    assert [r.offset for r in got] == list(range(6))
    assert [r.value for r in got] == values  # before: a record per chunk, each null
    assert got[2].key == b"big"
    # Restarted, kop resumes counting at its last checkpoint: the new ledger's first
    # entry, the first chunk of a chunked message, whole again from there.
    fresh_kop.stop()
    fresh_kop.start()
    again = kp_consume(fresh_kop.bootstrap, topic, 4, start=2)
    assert [(r.offset, r.value) for r in again] == list(zip(range(2, 6), values[2:], strict=True))
    assert "Traceback" not in fresh_kop.log_text()
