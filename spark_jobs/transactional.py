"""Events written in Kafka transactions, some aborted: by the Java producer of Spark's
own Kafka connector (kafka-clients, unmodified) driven from the driver through py4j,
since Spark's Kafka sink writes no transactions. What a committed-only view must
show is then known: every event of a committed transaction, none of an aborted one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from spark_jobs.events import as_kafka_records, events
from spark_jobs.options import Stack

ABORT_EVERY = 3  # every third transaction is aborted


@dataclass
class Written:
    committed: int = 0
    aborted: int = 0
    transactions: int = 0
    # one marker per transaction and partition it wrote to (each takes an offset)
    markers: int = 0
    aborted_ids: list[tuple[int, int]] = field(default_factory=list)  # [first, end) of each


def write_transactions(
    spark: SparkSession, stack: Stack, count: int, entities: int, first: int, per_txn: int
) -> Written:
    """Events `first`..`first + count` in transactions of `per_txn`, every
    ABORT_EVERY-th aborted."""
    rows = as_kafka_records(events(spark, count, entities, first, slices=1), "transactions")
    records = rows.collect()  # a few thousand: the driver sends them one by one
    jvm: Any = spark.sparkContext._jvm
    producer = _producer(jvm, stack.bootstrap)
    out = Written()
    try:
        producer.initTransactions()
        for n, start in enumerate(range(0, len(records), per_txn), start=1):
            chunk = records[start : start + per_txn]
            producer.beginTransaction()
            sent = [producer.send(_record(jvm, stack.topic, r)) for r in chunk]
            producer.flush()
            partitions = {f.get().partition() for f in sent}
            if n % ABORT_EVERY == 0:
                producer.abortTransaction()
                out.aborted += len(chunk)
                out.aborted_ids.append((first + start, first + start + len(chunk)))
            else:
                producer.commitTransaction()
                out.committed += len(chunk)
            out.transactions += 1
            out.markers += len(partitions)
    finally:
        producer.close()
    return out


def _producer(jvm: Any, bootstrap: str) -> Any:
    props = jvm.java.util.Properties()
    serializer = "org.apache.kafka.common.serialization.ByteArraySerializer"
    for key, value in {
        "bootstrap.servers": bootstrap,
        "transactional.id": f"kop-spark-{uuid.uuid4().hex[:8]}",
        "key.serializer": serializer,
        "value.serializer": serializer,
        "linger.ms": "5",
    }.items():
        props.setProperty(key, value)
    return jvm.org.apache.kafka.clients.producer.KafkaProducer(props)


def _record(jvm: Any, topic: str, row: Any) -> Any:
    record = jvm.org.apache.kafka.clients.producer.ProducerRecord(
        topic, bytearray(row.key.encode()), bytearray(row.value.encode())
    )
    for h in row.headers:
        record.headers().add(h.key, bytearray(h.value))
    return record
