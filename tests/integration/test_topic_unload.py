"""Pulsar moves topics (unloads on rebalancing, broker restarts): kop's producer
and readers reconnect underneath a busy Kafka producer, and still every record
is stored once, in order, at the offset the producer was told."""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest
from confluent_kafka import Producer

from tests.integration.admin import create_topic
from tests.integration.clients import cf_consume
from tests.integration.conftest import PULSAR_HTTP, KopProcess


def _unload(topic: str) -> None:
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}-partition-0/unload"
    urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=30).close()


@pytest.mark.parametrize("entry_format", ["kafka", "pulsar"])
def test_unloads_during_production_store_every_record_once(
    kop: KopProcess, topic: str, entry_format: str
) -> None:
    create_topic(kop.bootstrap, topic, entry_format=entry_format)
    producer = Producer(
        {
            "bootstrap.servers": kop.bootstrap,
            "linger.ms": 5,
            "enable.idempotence": True,
            "message.timeout.ms": 120000,
        }
    )
    acked: dict[int, bytes] = {}
    errors: list[object] = []

    def done(err, msg):  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(err)
        else:
            acked[msg.offset()] = msg.value()

    def unload_repeatedly() -> None:
        for _ in range(4):
            time.sleep(0.6)
            _unload(topic)

    unloader = threading.Thread(target=unload_repeatedly)
    unloader.start()
    n = 0
    while unloader.is_alive() or n < 5000:  # keep writing across every unload
        try:
            producer.produce(topic, value=b"%08d" % n, partition=0, on_delivery=done)
            n += 1
            if n % 20 == 0:
                time.sleep(0.002)  # ~10k records/s: enough in flight, a log quick to check
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    unloader.join()
    assert not errors
    assert sorted(acked) == list(range(n))
    assert all(v == b"%08d" % o for o, v in acked.items())
    got = cf_consume(kop.bootstrap, topic, n)
    assert [r.offset for r in got] == list(range(n))
    assert [r.value for r in got] == [b"%08d" % i for i in range(n)]
