"""Unmodified clients produce and consume through kop on a real Pulsar: every
client, every compression codec, both entry formats; offsets are 0..N-1 and
keys, values (null too), headers and timestamps come back exactly."""

from __future__ import annotations

import pytest

from tests.integration.admin import create_topic
from tests.integration.clients import CONSUMERS, PRODUCERS, Rec, sample_records
from tests.integration.conftest import KopProcess

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def _strip(recs: list[Rec]) -> list[tuple[object, ...]]:
    return [(r.key, r.value, r.headers, r.timestamp) for r in recs]


@pytest.mark.parametrize("entry_format", ["pulsar", "kafka"])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_produce_then_consume_roundtrip(
    kop: KopProcess, topic: str, client: str, codec: str | None, entry_format: str
) -> None:
    create_topic(kop.bootstrap, topic, entry_format=entry_format)
    recs = sample_records(40)
    offsets = PRODUCERS[client](kop.bootstrap, topic, recs, codec)
    assert offsets == list(range(40))
    got = CONSUMERS[client](kop.bootstrap, topic, 40)
    assert [r.offset for r in got] == list(range(40))
    assert _strip(got) == _strip(recs)


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
def test_every_client_reads_what_another_wrote(kop: KopProcess, topic: str, consumer: str) -> None:
    """Auto-created topic (default format), written by librdkafka, read by each client,
    starting in the middle of the log."""
    recs = sample_records(30)
    assert PRODUCERS["confluent-kafka"](kop.bootstrap, topic, recs, "lz4") == list(range(30))
    got = CONSUMERS[consumer](kop.bootstrap, topic, 20, start=10)
    assert [r.offset for r in got] == list(range(10, 30))
    assert _strip(got) == _strip(recs[10:])
