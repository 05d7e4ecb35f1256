"""Idempotent producers (on by default in Java 3.x and librdkafka): a retried
batch is written once and answered with its first offset; a sequence gap gets
OUT_OF_ORDER_SEQUENCE_NUMBER; a batch of an epoch older than one the producer has
written with gets INVALID_PRODUCER_EPOCH."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.integration.admin import create_topic
from tests.integration.clients import cf_consume, cf_produce, sample_records
from tests.integration.conftest import KopProcess


def _produce(client: RawClient, topic: str, batch: bytes) -> tuple[ErrorCode, int]:
    return client.produce(topic, batch)


def _batch(pid: int, epoch: int, seq: int, n: int, tag: str) -> bytes:
    recs = [Record(i, 1_700_000_000_000 + i, None, f"{tag}-{i}".encode()) for i in range(n)]
    return build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def _init_pid(client: RawClient) -> tuple[int, int]:
    resp = client.request(
        22,
        4,
        transactional_id=None,
        transaction_timeout=datetime.timedelta(0),
        producer_id=-1,
        producer_epoch=-1,
    )
    assert resp.error_code == ErrorCode.none
    return resp.producer_id, resp.producer_epoch


@pytest.mark.parametrize("entry_format", ["pulsar", "kafka"])
def test_retried_batch_is_written_once(kop: KopProcess, topic: str, entry_format: str) -> None:
    create_topic(kop.bootstrap, topic, entry_format=entry_format)
    client = RawClient(kop.port)
    pid, epoch = _init_pid(client)
    first = _batch(pid, epoch, 0, 3, "a")
    assert _produce(client, topic, first) == (ErrorCode.none, 0)
    assert _produce(client, topic, _batch(pid, epoch, 3, 2, "b")) == (ErrorCode.none, 3)
    # The client did not see the first answer and retries the very same batch.
    assert _produce(client, topic, first) == (ErrorCode.none, 0)
    assert _produce(client, topic, _batch(pid, epoch, 5, 1, "c")) == (ErrorCode.none, 5)
    got = cf_consume(kop.bootstrap, topic, 6)
    assert [r.value for r in got] == [b"a-0", b"a-1", b"a-2", b"b-0", b"b-1", b"c-0"]
    assert [r.offset for r in got] == list(range(6))
    client.close()


def test_sequence_gap_and_fenced_epoch_are_refused(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic)
    client = RawClient(kop.port)
    pid, epoch = _init_pid(client)
    assert _produce(client, topic, _batch(pid, epoch, 0, 2, "a")) == (ErrorCode.none, 0)
    code, _ = _produce(client, topic, _batch(pid, epoch, 5, 1, "gap"))
    assert code == ErrorCode.out_of_order_sequence_number
    bumped = client.request(
        22,
        4,
        transactional_id=None,
        transaction_timeout=datetime.timedelta(0),
        producer_id=pid,
        producer_epoch=epoch,
    )
    # Kafka answers an idempotent InitProducerId with a new id at epoch 0 whatever it
    # names (issue 33); a Java producer bumps an idempotent epoch itself (KIP-360).
    assert bumped.producer_id not in (-1, pid) and bumped.producer_epoch == 0
    assert _produce(client, topic, _batch(pid, epoch + 1, 0, 1, "new"))[0] == ErrorCode.none
    code, _ = _produce(client, topic, _batch(pid, epoch, 2, 1, "old"))
    assert code == ErrorCode.invalid_producer_epoch
    got = cf_consume(kop.bootstrap, topic, 3)
    assert [r.value for r in got] == [b"a-0", b"a-1", b"new-0"]
    client.close()


def test_librdkafka_idempotent_producer_is_accepted(kop: KopProcess, topic: str) -> None:
    recs = sample_records(200)
    offsets = cf_produce(
        kop.bootstrap, topic, recs, "zstd", **{"enable.idempotence": True, "max.in.flight": 5}
    )
    assert offsets == list(range(200))
