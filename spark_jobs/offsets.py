"""Kafka offsets recomputed from the Pulsar log alone (docs/offsets.md): a record's
offset is the number of records before it in its partition, counted from the
partition's start (spark_jobs.layout: 0, or kop's checkpoint at the first
message when retention deleted older ledgers).

A split only knows its records' places within it (`ordinal`). A partition read
as one split needs nothing more: offset = start + ordinal. A partition cut into
several takes a counting pass first: count each split's records, add the counts
of the splits before it in the driver (a handful of numbers), join that back.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.layout import PartitionLayout


def with_offsets(spark: SparkSession, rows: DataFrame, layouts: list[PartitionLayout]) -> DataFrame:
    """`rows` (the Pulsar view) with an `offset` column."""
    cut = {lay.partition for lay in layouts if len(lay.splits) > 1}
    counts: dict[tuple[int, int], int] = {}
    if cut:
        several = rows.filter(F.col("partition").isin(sorted(cut)))
        for r in several.groupBy("partition", "split").count().collect():
            counts[(r.partition, r.split)] = r["count"]
    bases = []
    for lay in layouts:
        base = lay.start
        for split in lay.splits:
            bases.append((lay.partition, split.index, base))
            base += counts.get((lay.partition, split.index), 0)
    base_df = spark.createDataFrame(bases, "partition int, split int, base long")
    joined = rows.join(F.broadcast(base_df), ["partition", "split"])
    return joined.withColumn("offset", F.col("base") + F.col("ordinal")).drop("base")
