"""Readers kop creates on a real Pulsar (issue 18). Each is a non-durable
subscription created and deleted on the broker; a Pulsar that `make run` started
saw 79,000 of them in 75 minutes, 18 a second, from two kop paths: the tail
follower opened a new reader after every pause of a producer (so one per record
for a producer that sends one at a time), and every open partition opened one
per retention check to learn where its log begins."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession
from kop.storage.types import StorageError
from tests.integration.admin import create_topic
from tests.integration.clients import cf_consume
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, KopProcess
from tests.integration.observe import metric, truncate, unload, wait_for_partition


@pytest.fixture
def gateway(pulsar: str, tmp_path: Path) -> Any:
    """A gateway of the test's own (its reader counts are the test's alone) that
    looks for trims every second."""
    gw = KopProcess(tmp_path, KOP_RETENTION_CHECK_S="1")
    gw.start()
    yield gw
    gw.stop()


def _opened(gateway: KopProcess) -> float:
    value = metric(gateway, "kop_pulsar_readers_opened_total")
    assert value is not None, "kop_pulsar_readers_opened_total is missing from /metrics"
    return value


def test_a_producer_pausing_after_each_record_opens_no_reader_per_record(
    gateway: KopProcess, topic: str
) -> None:
    create_topic(gateway.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, linger_ms=0)
    try:
        producer.send(topic, b"warm-up").get(30)  # the partition open, its reader made
        before = _opened(gateway)
        for i in range(20):
            assert producer.send(topic, b"r%d" % i).get(30).offset == i + 1
            time.sleep(0.3)  # a pause: the follower stops counting receipts each time
        opened = _opened(gateway) - before
    finally:
        producer.close()
    assert opened <= 2, f"{opened:.0f} readers opened for 20 records"
    got = cf_consume(gateway.bootstrap, topic, 21, 0)
    assert [r.value for r in got] == [b"warm-up", *(b"r%d" % i for i in range(20))]


def test_retention_checks_open_no_readers_and_still_see_trims(
    gateway: KopProcess, topic: str
) -> None:
    create_topic(gateway.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, linger_ms=0)
    try:
        for i in range(5):
            producer.send(topic, b"a%d" % i).get(30)
        unload(topic)  # the next records go to a new ledger
        for i in range(5):
            producer.send(topic, b"b%d" % i).get(30)
    finally:
        producer.close()
    wait_for_partition(gateway, topic, lambda s: s.get("high_watermark") == 10, "counted")
    before = _opened(gateway)
    time.sleep(5)  # five retention checks of an idle partition
    assert _opened(gateway) - before == 0
    truncate(topic)  # the first ledger goes
    wait_for_partition(gateway, topic, lambda s: s.get("log_start_offset") == 5, "log start moved")
    got = cf_consume(gateway.bootstrap, topic, 5, 0, "earliest")
    assert [(r.offset, r.value) for r in got] == [(5 + i, b"b%d" % i) for i in range(5)]


async def test_where_a_missing_partition_begins_is_an_error_not_an_empty_log(pulsar: str) -> None:
    """Retention must not take a partition it cannot find for one whose data is all
    gone (it would move the log start to the high watermark)."""
    admin = PulsarAdmin(PULSAR_HTTP)
    session = PulsarSession(PULSAR_URL, admin)
    try:
        with pytest.raises(StorageError):
            await session.earliest(f"persistent://public/default/none-{uuid.uuid4().hex}")
    finally:
        await session.close()
        await admin.close()
