"""The two views of one topic as DataFrames with the same columns: the Kafka view
through kop (Spark's own Kafka source: an unmodified Java consumer) and the
Pulsar view straight from Pulsar (spark_jobs.pulsar_source), each whole or
committed records only (Kafka's read_committed; the Pulsar view filtered as
docs/transactions.md says a Pulsar application filters it)."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_jobs.layout import PartitionLayout
from spark_jobs.options import Stack
from spark_jobs.pulsar_source import NAME, PulsarView, splits_option

RECORD = ["partition", "offset", "key", "value", "timestamp", "headers"]


def kafka_view(
    spark: SparkSession,
    stack: Stack,
    ending: dict[int, int] | None = None,
    min_partitions: int | None = None,
    by_time: bool = False,
    lossy: bool = False,
    committed: bool = False,
) -> DataFrame:
    """Every record from the earliest offset to `ending` (partition -> offset,
    exclusive, or with `by_time` -> a timestamp: up to the first record at or
    after it; default the latest), as a batch. `lossy`: skip offsets that do not
    come instead of failing (Spark's failOnDataLoss=false). `committed`: read as
    isolation.level=read_committed."""
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", stack.bootstrap)
        .option("kafka.isolation.level", "read_committed" if committed else "read_uncommitted")
        .option("subscribe", stack.topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .option("failOnDataLoss", "false" if lossy else "true")
    )
    if ending is not None:
        option = "endingOffsetsByTimestamp" if by_time else "endingOffsets"
        ending_json = {stack.topic: {str(p): v for p, v in ending.items()}}
        reader = reader.option(option, json.dumps(ending_json))
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    return reader.load().select(
        "partition",
        "offset",
        "key",
        "value",
        F.unix_millis("timestamp").alias("timestamp"),
        F.coalesce("headers", F.array().cast("array<struct<key:string,value:binary>>")).alias(
            "headers"
        ),
    )


def pulsar_rows(spark: SparkSession, stack: Stack, layouts: list[PartitionLayout]) -> DataFrame:
    """The Pulsar view's raw rows (no offsets yet: see spark_jobs.offsets)."""
    spark.dataSource.register(PulsarView)
    splits = [s for layout in layouts for s in layout.splits]
    return (
        spark.read.format(NAME)
        .option("serviceUrl", stack.pulsar_url)
        .option("splits", splits_option(splits))
        .load()
    )


def records_only(rows: DataFrame) -> DataFrame:
    """The Pulsar view's rows (with offsets) without the transactions' markers, which
    take an offset but are no record a Kafka consumer is given."""
    return rows.filter(F.col("control").isNull())


def committed(rows: DataFrame) -> DataFrame:
    """What a read_committed consumer reads, from the Pulsar view's rows (with
    offsets): a producer's transactional records are held until its next marker in
    the partition, kept on commit, dropped on abort; the markers are dropped; and,
    as Kafka's last stable offset, a partition ends at the first record of a
    transaction with no marker yet."""
    following = (
        Window.partitionBy("partition", "producer_id")
        .orderBy("offset")
        .rowsBetween(Window.currentRow, Window.unboundedFollowing)
    )
    txn = rows.filter(F.col("producer_id") >= 0).withColumn(
        "fate", F.first("control", ignorenulls=True).over(following)
    )
    stable = (
        txn.filter(F.col("fate").isNull()).groupBy("partition").agg(F.min("offset").alias("stable"))
    )
    kept = rows.filter(F.col("producer_id") < 0).unionByName(
        txn.filter(F.col("control").isNull() & (F.col("fate") == "commit")).drop("fate")
    )
    return (
        kept.join(F.broadcast(stable), "partition", "left")
        .filter(F.col("stable").isNull() | (F.col("offset") < F.col("stable")))
        .drop("stable")
    )
