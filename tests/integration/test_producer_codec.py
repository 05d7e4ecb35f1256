"""Records come back in their producer's codec, on a real Pulsar (docs/decisions.md
D11): a compressed batch produced to a `pulsar`-format topic is stored compressed
in the Pulsar codec of the same algorithm, a Pulsar consumer reads its messages
natively, and a fetch serves the batch compressed in the producer's Kafka codec."""

from __future__ import annotations

import pulsar
import pytest

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch, iter_batches, read_header
from kop.topics.configs import PULSAR_BATCHING as BATCHING
from tests.integration.admin import create_topic
from tests.integration.clients import cf_consume
from tests.integration.conftest import PULSAR_URL, KopProcess

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PULSAR_CODEC = {"gzip": "ZLIB", "snappy": "SNAPPY", "lz4": "LZ4", "zstd": "ZSTD"}


def _records(n: int) -> list[Record]:
    return [
        Record(i, 1_700_000_000_000 + i, b"key-%d" % i, b"value %d " % i * 50) for i in range(n)
    ]


def _codecs_served(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        head = read_header(data, pos)
        out.append(head.compression)
        pos += head.length
    return out


@pytest.mark.parametrize("batching", ["true", "false"])
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_fetch_serves_the_producers_codec_and_pulsar_reads_natively(
    kop: KopProcess, topic: str, codec: str, batching: str
) -> None:
    """Failed before: the fetched batches were uncompressed, 4-5 times the bytes."""
    create_topic(kop.bootstrap, topic, entry_format="pulsar", configs={BATCHING: batching})
    recs = _records(20)
    batch = build_batch(recs, compression=CODECS[codec])
    client = RawClient(kop.port)
    try:
        assert client.produce(topic, batch) == (0, 0)
        part = client.fetch(topic, 0).responses[0].partitions[0]
    finally:
        client.close()
    assert part.error_code == 0
    served = part.records
    assert set(_codecs_served(served)) == {CODECS[codec]}
    assert [(r.offset, r.key, r.value) for r in iter_batches(served)] == [
        (r.offset, r.key, r.value) for r in recs
    ]
    plain = sum(len(r.value or b"") for r in recs)
    assert len(served) < plain / 2

    got = cf_consume(kop.bootstrap, topic, 20)
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in recs]

    pulsar_client = pulsar.Client(PULSAR_URL)
    try:
        reader = pulsar_client.create_reader(
            f"persistent://public/default/{topic}-partition-0", pulsar.MessageId.earliest
        )
        msgs = [reader.read_next(10_000) for _ in recs]
    finally:
        pulsar_client.close()
    assert [(m.partition_key().encode(), m.data()) for m in msgs] == [
        (r.key, r.value) for r in recs
    ]
