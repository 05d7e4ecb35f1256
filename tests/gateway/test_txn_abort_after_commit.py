"""An abort right after a commit, with an unmodified client (librdkafka).

librdkafka answers `abort_transaction()` with an EndTxn(ABORT) once it has sent
an AddPartitionsToTxn for the transaction, even when that request was answered
CONCURRENT_TRANSACTIONS (it cannot tell whether the broker took it). If the
coordinator answered so because the previous transaction's markers were still
being written, the abort reaches a transactional id whose last transaction was
a commit, and Kafka's answer to that is INVALID_TXN_STATE, fatal to the producer.
Pulsar writes markers slower than Kafka's brokers do, so kop holds a request for
a transactional id whose previous end is still being written until that end is
done (bounded), rather than answering CONCURRENT_TRANSACTIONS at once: found by
the cluster tier (tests/cluster/test_hostile_tenant.py), where an application
that aborts right after a commit failed fatally."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer

from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.sim import memory_log

PARTITIONS = 3


def _commit_then_abort(port: int, rounds: int) -> None:
    producer = Producer({
        "bootstrap.servers": f"127.0.0.1:{port}", "transactional.id": "ledger",
        "linger.ms": 5,
    })  # fmt: skip
    producer.init_transactions(30)
    for n in range(rounds):
        producer.begin_transaction()
        for i in range(10):
            producer.produce("hot", f"{n}-{i}".encode(), partition=i % PARTITIONS)
        if n % 2:
            producer.poll(0.005)  # some work first: its AddPartitionsToTxn is sent
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    producer.flush(10)


async def test_an_abort_right_after_a_commit_is_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each write to the storage takes as long as a Pulsar send does on this machine
    monkeypatch.setattr(memory_log, "SEND_LATENCY_S", 0.02)
    async with gateway_with_hot_topic(PARTITIONS) as (gateway, _):
        await asyncio.to_thread(_commit_then_abort, gateway.kafka_port, 12)
