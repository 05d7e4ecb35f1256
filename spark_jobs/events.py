"""The events the jobs write and replay: an event-sourcing shape (an account's
deposits, withdrawals, fees...), deterministic from the event number so any run
can say what the topic should hold.

Amounts are integer cents: sums must agree exactly however they are grouped.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

TYPES = ["opened", "deposit", "withdrawal", "transfer-in", "transfer-out", "fee", "interest"]
EVENT_SCHEMA = "id long, entity string, type string, amount long, ts long"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z: event time of event 0


def event_columns(ids: Column, entities: int, first: int = 0) -> list[Column]:
    """id, entity, type, amount, ts of events number `first + ids`."""
    n = ids + F.lit(first)
    h = F.abs(F.xxhash64(n))
    types = F.array(*[F.lit(t) for t in TYPES])
    return [
        n.alias("id"),
        F.format_string("acct-%06d", h % entities).alias("entity"),
        F.element_at(types, (h % len(TYPES) + 1).cast("int")).alias("type"),
        ((h % 200_001) - 100_000).alias("amount"),
        (F.lit(T0) + n * 37).alias("ts"),
    ]


def events(spark: SparkSession, count: int, entities: int, first: int = 0,
           slices: int | None = None) -> DataFrame:  # fmt: skip
    ids = spark.range(count, numPartitions=slices or spark.sparkContext.defaultParallelism)
    return ids.select(*event_columns(F.col("id"), entities, first))


def as_kafka_records(df: DataFrame, source: str) -> DataFrame:
    """key = entity, value = the event as JSON, headers name its type and writer."""
    headers = F.array(
        F.struct(F.lit("event-type").alias("key"), F.encode("type", "UTF-8").alias("value")),
        F.struct(F.lit("source").alias("key"), F.encode(F.lit(source), "UTF-8").alias("value")),
    )
    return df.select(
        F.col("entity").alias("key"),
        F.to_json(F.struct("id", "entity", "type", "amount", "ts")).alias("value"),
        headers.alias("headers"),
    )


def parse_events(records: DataFrame) -> DataFrame:
    """Records of either view -> (partition, offset, timestamp, event columns)."""
    parsed = F.from_json(F.col("value").cast("string"), EVENT_SCHEMA)
    return records.select("partition", "offset", "timestamp", parsed.alias("e")).select(
        "partition", "offset", "timestamp", "e.*"
    )


def state(events_df: DataFrame) -> DataFrame:
    """The event-sourced state per entity: how many events, the balance, the last one
    (by event time, then id: the same whichever order the events are read in)."""
    last = F.max_by(F.struct("id", "type"), F.struct("ts", "id"))
    return events_df.groupBy("entity").agg(
        F.count("*").alias("events"),
        F.sum("amount").alias("balance"),
        last.getField("id").alias("last_id"),
        last.getField("type").alias("last_type"),
    )
