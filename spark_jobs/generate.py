"""generate: N events written through kop by Spark's own Kafka sink (an unmodified
Java producer), optionally M more by native Pulsar producers straight to Pulsar,
and T more in Kafka transactions through kop, every third aborted
(spark_jobs.transactional)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_jobs.events import as_kafka_records, events
from spark_jobs.kafka_admin import KafkaAdmin
from spark_jobs.options import Stack
from spark_jobs.progress import Phases, say
from spark_jobs.report import draw_counts_and_rates, write_report
from spark_jobs.transactional import Written, write_transactions

PRODUCER_DEFAULTS = {"linger.ms": "20", "batch.size": str(1 << 20), "compression.type": "none"}


def generate(
    spark: SparkSession,
    stack: Stack,
    *,
    count: int,
    pulsar_events: int,
    partitions: int,
    entities: int,
    entry_format: str | None,
    recreate: bool,
    producer: dict[str, str],
    transactional: int = 0,
    transaction_size: int = 50,
) -> bool:
    admin = KafkaAdmin(spark, stack.bootstrap)
    phases = Phases(spark.sparkContext)
    try:
        with phases.phase("create topic"):
            if stack.topic in admin.topics():
                if not recreate:
                    raise SystemExit(f"topic {stack.topic} exists; pass --recreate to replace it")
                admin.delete_topic(stack.topic)
            configs = {} if entry_format is None else {"kop.entry.format": entry_format}
            if pulsar_events:  # Pulsar producers write beside kop's: no fence (D15)
                configs["kop.pulsar.shared.writes"] = "true"
            admin.create_topic(stack.topic, partitions, configs)
        with phases.phase("write through kop (Spark Kafka sink)", count):
            writer = as_kafka_records(events(spark, count, entities), "spark").write.format("kafka")
            options = {**PRODUCER_DEFAULTS, **producer}
            for k, v in options.items():
                writer = writer.option(f"kafka.{k}", v)
            writer.option("kafka.bootstrap.servers", stack.bootstrap).option(
                "topic", stack.topic
            ).save()
        if pulsar_events:
            with phases.phase("write straight to Pulsar (native producers)", pulsar_events):
                _write_native(spark, stack, pulsar_events, entities, first=count)
        written = Written()
        if transactional:
            with phases.phase("write transactions through kop (Java producer)", transactional):
                first = count + pulsar_events
                written = write_transactions(
                    spark, stack, transactional, entities, first, transaction_size
                )
        with phases.phase("wait for kop to count every record"):
            total = count + pulsar_events + transactional + written.markers
            ends = admin.caught_up(stack.topic, partitions, lambda e: sum(e.values()) >= total)
    finally:
        phases.close()
        admin.close()
    report = {
        "topic": stack.topic,
        "events": {
            "kafka": count,
            "pulsar": pulsar_events,
            "transactional": {"committed": written.committed, "aborted": written.aborted},
        },
        "transactions": {
            "count": written.transactions,
            "markers": written.markers,
            "aborted_ids": written.aborted_ids,
        },
        "entry_format": entry_format or "kop's default",
        "partitions": {str(p): n for p, n in ends.items()},
        "producer": {**PRODUCER_DEFAULTS, **producer},
        "timings": phases.timings,
    }
    write_report(
        stack.report_dir,
        "generate",
        report,
        lambda fig: draw_counts_and_rates(fig, stack.topic, {"records": ends}, phases.timings),
    )
    counted = sum(ends.values())
    if counted != total:
        say(f"generate FAILED: kop counts {counted:,} offsets; {total:,} written "
            f"({written.markers:,} of them transaction markers)")  # fmt: skip
        return False
    say(f"generate: {counted - written.markers:,} records in {stack.topic}")
    return True


def _write_native(spark: SparkSession, stack: Stack, count: int, entities: int, first: int) -> None:
    """Each Spark task runs one native Pulsar producer on the partitioned topic
    (Pulsar routes by partition key)."""
    url, topic = stack.pulsar_url, stack.pulsar_topic()

    def send(rows: Iterator[Any]) -> None:
        import pulsar

        client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
        try:
            producer = client.create_producer(
                topic, batching_max_publish_delay_ms=5, block_if_queue_full=True
            )
            failed: list[str] = []

            def sent(result: Any, _msg_id: Any) -> None:
                if result != pulsar.Result.Ok:
                    failed.append(str(result))

            for r in rows:
                producer.send_async(
                    r.value.encode(),
                    sent,
                    partition_key=r.entity,
                    properties={"event-type": r.type, "source": "pulsar-native"},
                    event_timestamp=r.ts,
                )
            producer.flush()
            producer.close()
            if failed:
                raise RuntimeError(f"{len(failed)} native sends failed, first: {failed[0]}")
        finally:
            client.close()

    df = events(spark, count, entities, first=first)
    value = F.to_json(F.struct(*df.columns)).alias("value")
    df.select("entity", "type", "ts", value).foreachPartition(send)
