"""The Kafka view and the Pulsar view of one topic agree, in both directions."""

from __future__ import annotations

import base64

import pulsar

from conformance.clients.kafka_python import KafkaPython
from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec, cf_consume, kp_consume
from tests.integration.conftest import PULSAR_URL, KopProcess


def _partition0(topic: str) -> str:
    return f"persistent://public/default/{topic}-partition-0"


def test_pulsar_consumer_reads_what_kafka_wrote(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic, entry_format="pulsar")
    recs = [
        Rec(b"user-1", b"hello", (("trace", b"abc"),), 1_700_000_000_123),
        Rec(b"\xff\xfe", b"binary key", (), 1_700_000_000_124),
        Rec(b"user-2", None, (("a", b"1"), ("a", b"2")), 1_700_000_000_125),
    ]
    assert KafkaPython().produce(kop.bootstrap, topic, recs, idempotent=True) == [0, 1, 2]
    client = pulsar.Client(PULSAR_URL)
    try:
        reader = client.create_reader(_partition0(topic), pulsar.MessageId.earliest)
        msgs = [reader.read_next(10_000) for _ in recs]
    finally:
        client.close()
    first, second, third = msgs
    assert first.partition_key() == "user-1" and first.data() == b"hello"
    # The Kafka batch is one Pulsar batch entry: a message per record. Headers are
    # plain properties; the idempotence stamp belongs to the entry, not the messages.
    ids = [m.message_id() for m in msgs]
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1
    assert [i.batch_index() for i in ids] == [0, 1, 2]
    assert first.properties() == {"trace": "abc"}
    assert second.properties() == {"__kafka.key": "b64"}
    assert first.event_timestamp() == 1_700_000_000_123
    assert base64.b64decode(second.partition_key()) == b"\xff\xfe"
    assert third.has_null_value() and third.properties()["a"] == "1"


def test_kafka_consumer_reads_what_pulsar_wrote_with_dense_offsets(
    kop: KopProcess, topic: str
) -> None:
    create_topic(kop.bootstrap, topic)
    client = pulsar.Client(PULSAR_URL)
    try:
        batched = client.create_producer(
            _partition0(topic), batching_enabled=True, batching_max_publish_delay_ms=50
        )
        for i in range(25):
            batched.send_async(
                f"b{i}".encode(),
                None,
                partition_key=f"k{i}",
                properties={"n": str(i)},
                event_timestamp=1000 + i,
            )
        batched.flush()
        single = client.create_producer(_partition0(topic), batching_enabled=False)
        for i in range(5):
            single.send(f"s{i}".encode())
    finally:
        client.close()
    got = kp_consume(kop.bootstrap, topic, 30)
    assert [r.offset for r in got] == list(range(30))
    assert [r.value for r in got] == [f"b{i}".encode() for i in range(25)] + [
        f"s{i}".encode() for i in range(5)
    ]
    assert got[3].key == b"k3" and got[3].headers == (("n", b"3"),) and got[3].timestamp == 1003
    assert got[27].key is None and got[27].timestamp > 1_600_000_000_000  # publish time


SHARED = {"kop.pulsar.shared.writes": "true"}  # Pulsar producers write beside kop (D21)


def test_mixed_formats_and_writers_share_one_offset_sequence(kop: KopProcess, topic: str) -> None:
    """kafka-format batches count their records, Pulsar messages count one each."""
    create_topic(kop.bootstrap, topic, entry_format="kafka", configs=SHARED)
    recs = [Rec(None, f"k{i}".encode(), (), 5000 + i) for i in range(7)]
    assert PRODUCERS["confluent-kafka"](kop.bootstrap, topic, recs, "snappy") == list(range(7))
    client = pulsar.Client(PULSAR_URL)
    try:
        producer = client.create_producer(_partition0(topic))
        producer.send(b"native")
    finally:
        client.close()
    more = [Rec(b"x", f"m{i}".encode(), (), 6000 + i) for i in range(3)]
    assert PRODUCERS["kafka-python"](kop.bootstrap, topic, more, None) == [8, 9, 10]
    got = cf_consume(kop.bootstrap, topic, 11)
    assert [r.offset for r in got] == list(range(11))
    assert [r.value for r in got][6:9] == [b"k6", b"native", b"m0"]


def test_a_topic_kop_made_takes_pulsar_producers_unless_it_keeps_them_out(
    kop: KopProcess, topic: str
) -> None:
    """The promise both ways, by default: a Pulsar application (a Function writing its
    output) writes to a topic a Kafka producer created, though the fixture's kop has a
    cluster secret (several instances may own a partition): kop takes the partition
    with a fence, then writes it Shared at the fence's epoch (D21). A topic created with
    kop.pulsar.shared.writes=false keeps Pulsar producers out while kop writes it
    (ProducerBusy)."""
    first = [Rec(None, b"kafka", (), 5000)]
    assert PRODUCERS["confluent-kafka"](kop.bootstrap, topic, first, None) == [0]
    closed = f"{topic}-closed"
    create_topic(kop.bootstrap, closed, configs={"kop.pulsar.shared.writes": "false"})
    assert PRODUCERS["confluent-kafka"](kop.bootstrap, closed, first, None) == [0]
    client = pulsar.Client(PULSAR_URL)
    try:
        try:
            client.create_producer(_partition0(closed), send_timeout_millis=5000)
            raise AssertionError("a Pulsar producer was let in beside kop's exclusive one")
        except pulsar.ProducerBusy:
            pass
        client.create_producer(_partition0(topic)).send(b"native")
    finally:
        client.close()
    assert PRODUCERS["kafka-python"](kop.bootstrap, topic, first, None) == [2]
    got = cf_consume(kop.bootstrap, topic, 3)
    assert [r.value for r in got] == [b"kafka", b"native", b"kafka"]
