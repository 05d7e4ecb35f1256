"""One transactional flow per client family that has transactions (confluent-kafka,
kafka-python, aiokafka, franz-go, Sarama, kafkajs): commit, abort, then a second
producer with the same transactional id fences the first while it has a transaction
open. Returns how the zombie's next commit failed, as the client names it. Used by
the conformance scenarios (judged against Kafka) and by kop's own tests."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
from collections.abc import Callable

from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaException, Producer
from kafka import KafkaProducer

from conformance.clients.go_clients import FranzGo, Sarama
from conformance.clients.kafkajs import KafkaJS

PARTITIONS = 2
# The records: c1, c2 committed (partitions 0 and 1), a1 aborted (0), the zombie's
# (0) aborted when it is fenced, c3 the second producer's (1).


def confluent(bootstrap: str, topic: str, txn_id: str) -> str:
    def producer() -> Producer:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        p.init_transactions(30)
        return p

    first = producer()
    for values, commit in (([b"c1", b"c2"], True), ([b"a1"], False)):
        first.begin_transaction()
        for i, v in enumerate(values):
            first.produce(topic, v, partition=i % PARTITIONS)
        first.flush(30)  # an abort drops what was not sent yet
        first.commit_transaction(30) if commit else first.abort_transaction(30)
    first.begin_transaction()
    first.produce(topic, b"zombie", partition=0)
    first.flush(30)
    second = producer()
    second.begin_transaction()
    second.produce(topic, b"c3", partition=1)
    second.commit_transaction(30)
    try:
        first.produce(topic, b"late", partition=1)
        first.commit_transaction(30)
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "not fenced"


def kafka_python(bootstrap: str, topic: str, txn_id: str) -> str:
    def producer() -> KafkaProducer:
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        p.init_transactions()
        return p

    first = producer()
    for values, commit in (([b"c1", b"c2"], True), ([b"a1"], False)):
        first.begin_transaction()
        for i, v in enumerate(values):
            first.send(topic, v, partition=i % PARTITIONS)
        first.flush(30)
        first.commit_transaction() if commit else first.abort_transaction()
    first.begin_transaction()
    first.send(topic, b"zombie", partition=0).get(30)
    second = producer()
    second.begin_transaction()
    second.send(topic, b"c3", partition=1)
    second.commit_transaction()
    second.close()
    try:
        first.send(topic, b"late", partition=1).get(30)
        first.commit_transaction()
    except Exception as exc:  # kafka-python raises its own errors, by name
        return type(exc).__name__
    finally:
        first.close(timeout=5)
    return "not fenced"


def aiokafka(bootstrap: str, topic: str, txn_id: str) -> str:
    async def go() -> str:
        first = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await first.start()
        try:
            for values, commit in (([b"c1", b"c2"], True), ([b"a1"], False)):
                await first.begin_transaction()
                for i, v in enumerate(values):
                    await first.send_and_wait(topic, v, partition=i % PARTITIONS)
                await (first.commit_transaction() if commit else first.abort_transaction())
            await first.begin_transaction()
            await first.send_and_wait(topic, b"zombie", partition=0)
            second = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
            await second.start()
            async with second.transaction():
                await second.send_and_wait(topic, b"c3", partition=1)
            await second.stop()
            try:
                await first.send_and_wait(topic, b"late", partition=1)
                await first.commit_transaction()
            except Exception as exc:  # aiokafka's own errors, by name
                return type(exc).__name__
            return "not fenced"
        finally:
            await asyncio.wait_for(first.stop(), 10)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # not on the caller's loop
        fenced = pool.submit(asyncio.run, go()).result()
    # The fenced producer's objects are finalized now, not whenever the collector next
    # runs: their finalizers log with tracebacks, which parse source (Python 3.11), and
    # from inside another compile() (a module imported later) that fails the import.
    gc.collect()
    return fenced


FLOWS: dict[str, Callable[[str, str, str], str]] = {
    "confluent-kafka": confluent, "kafka-python": kafka_python, "aiokafka": aiokafka,
    # the same flow in Go (conformance/clients/go/<lib>/txn.go)
    "franz-go": lambda b, t, x: FranzGo().txn_flow(b, t, x),
    "sarama": lambda b, t, x: Sarama().txn_flow(b, t, x),
    "kafkajs": lambda b, t, x: KafkaJS().txn_flow(b, t, x),  # in Node (node/driver.js)
}  # fmt: skip
