"""A Pulsar application that sets kop's reserved `__kafka.*` properties badly cannot
stop a partition: Kafka consumers get every message as a record, at its dense
offset, with the documented fallbacks (docs/offsets.md, "Malformed reserved
properties"), and kop counts the malformed messages."""

from __future__ import annotations

import asyncio
import base64
import threading

import pulsar

from kop.pulsar.wire import WireClient, pb
from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec, kp_consume
from tests.integration.conftest import PULSAR_URL, KopProcess
from tests.integration.observe import metric, wait_for_partition


def test_malformed_reserved_properties_are_served_and_counted(
    fresh_kop: KopProcess, topic: str
) -> None:
    create_topic(fresh_kop.bootstrap, topic)
    client = pulsar.Client(PULSAR_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(
            f"persistent://public/default/{topic}-partition-0", batching_enabled=False
        )
        # 0: timestamp property not an integer, event time set.
        producer.send(
            b"bad-ts",
            properties={"__kafka.ts": "abc", "app": "x"},
            partition_key="k0",
            event_timestamp=1_700_000_000_001,
        )
        # 1: "the partition key is base64" on one that is not.
        producer.send(
            b"bad-key",
            properties={"__kafka.key": "b64"},
            partition_key="not base64!",
            event_timestamp=1_700_000_000_002,
        )
        # 2: two bad properties on one message, no event time, no partition key.
        producer.send(
            b"bad-ts-and-headers",
            properties={"__kafka.ts": "12x", "__kafka.headers": "{oops", "p": "1"},
        )
        # 3: well-formed reserved property (a binary key), as kop itself writes it.
        producer.send(
            b"good",
            properties={"__kafka.key": "b64", "h": "v"},
            partition_key=base64.b64encode(b"\x00\xffgood").decode(),
            event_timestamp=1_700_000_000_004,
        )
        reader = client.create_reader(
            f"persistent://public/default/{topic}-partition-0", pulsar.MessageId.earliest
        )
        published = [reader.read_next(10_000).publish_timestamp() for _ in range(4)]
    finally:
        client.close()

    got = kp_consume(fresh_kop.bootstrap, topic, 4)
    assert [(r.offset, r.value, r.key, r.timestamp, r.headers) for r in got] == [
        (0, b"bad-ts", b"k0", 1_700_000_000_001, (("__kafka.ts", b"abc"), ("app", b"x"))),
        (1, b"bad-key", b"not base64!", 1_700_000_000_002, (("__kafka.key", b"b64"),)),
        (
            2,
            b"bad-ts-and-headers",
            None,
            published[2],  # no event time: publish time
            (("__kafka.headers", b"{oops"), ("__kafka.ts", b"12x"), ("p", b"1")),
        ),
        (3, b"good", b"\x00\xffgood", 1_700_000_000_004, (("h", b"v"),)),
    ]

    # Not blocked: Kafka producers continue right after them.
    more = [Rec(b"kafka", b"after", (), 1_700_000_000_005)]
    assert PRODUCERS["kafka-python"](fresh_kop.bootstrap, topic, more, None) == [4]

    state = wait_for_partition(
        fresh_kop, topic, lambda s: s.get("high_watermark") == 5, "all 5 records counted"
    )
    assert state["malformed_messages"] == 3 and state["last_error"] is None, state
    assert metric(fresh_kop, "kop_malformed_messages_total") == 3
    # Logged once per partition, not once per message.
    assert fresh_kop.log_text().count("has malformed") == 1, fresh_kop.log_text()[-3000:]


def _forge_corrupt_entries(topic: str) -> None:
    """A single message and a batch of 3 whose payloads do not decompress within
    kop's bound, written with kop's own wire client (a Pulsar client would compress
    them properly): an LZ4 block that claims 2 GiB, and zlib bytes that are not zlib."""

    async def forge() -> None:
        client = WireClient(PULSAR_URL)
        try:
            producer = await client.create_producer(topic)
            single = pb.MessageMetadata(compression=pb.LZ4, uncompressed_size=(1 << 31) - 1)
            batch = pb.MessageMetadata(
                compression=pb.ZLIB, uncompressed_size=300, num_messages_in_batch=3
            )
            for metadata in (single, batch):
                await producer.send(metadata, b"\xff" * 40)
            await producer.close()
        finally:
            await client.close()

    thread = threading.Thread(target=lambda: asyncio.run(forge()))
    thread.start()
    thread.join()


def test_an_entry_that_does_not_decompress_keeps_its_offsets_and_stops_nothing(
    fresh_kop: KopProcess, topic: str
) -> None:
    # Pulsar producers (the forgery) write beside kop: no fence (D15).
    create_topic(fresh_kop.bootstrap, topic, configs={"kop.pulsar.shared.writes": "true"})
    before = [Rec(b"k", b"before", (), 1_700_000_000_000)]
    assert PRODUCERS["kafka-python"](fresh_kop.bootstrap, topic, before, None) == [0]
    _forge_corrupt_entries(f"persistent://public/default/{topic}-partition-0")
    after = [Rec(b"k", b"after", (), 1_700_000_000_005)]
    assert PRODUCERS["kafka-python"](fresh_kop.bootstrap, topic, after, None) == [5]

    got = kp_consume(fresh_kop.bootstrap, topic, 6)
    assert [(r.offset, r.value) for r in got] == [
        (0, b"before"),
        (1, None),  # the single message
        (2, None),  # the batch's 3 messages
        (3, None),
        (4, None),
        (5, b"after"),
    ]
    state = wait_for_partition(
        fresh_kop, topic, lambda s: s.get("high_watermark") == 6, "all 6 records counted"
    )
    assert state["malformed_messages"] == 2 and state["last_error"] is None, state
