"""Kafka offsets recomputed from the Pulsar log alone (DESIGN.md's rule): a record's
offset is the number of records before it in its partition.

Splits are read in parallel and each only knows its records' places within it
(`ordinal`), so offsets take two steps: count each split's records, then add
the counts of the splits before it in the driver (a handful of numbers per
partition) and join that base back.

Where the partition starts: offset 0 at its first stored message, unless kop
persisted a checkpoint naming that message (the oldest ledgers were deleted by
retention, and kop knows what the first survivor's offset is).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.layout import PartitionLayout


@dataclass(frozen=True, slots=True)
class Start:
    partition: int
    offset: int  # the offset of the first stored record
    anchored: bool  # True: taken from kop's checkpoint at the first message


def with_offsets(
    spark: SparkSession, rows: DataFrame, layouts: list[PartitionLayout]
) -> tuple[DataFrame, dict[int, Start]]:
    """`rows` (the Pulsar view, cached by the caller) with an `offset` column."""
    counts = rows.groupBy("partition", "split").count().collect()
    firsts = (
        rows.filter((F.col("split") == 0) & (F.col("ordinal") == 0))
        .select("partition", "ledger", "entry", "batch")
        .collect()
    )
    by_partition = {layout.partition: layout for layout in layouts}
    starts: dict[int, Start] = {}
    for r in firsts:
        checkpoints = by_partition[r.partition].persisted.checkpoints.values()
        found = [c.offset for c in checkpoints if tuple(c.position) == (r.ledger, r.entry, r.batch)]
        starts[r.partition] = Start(r.partition, found[0] if found else 0, bool(found))
    n = {(r.partition, r.split): r["count"] for r in counts}
    bases = []
    for partition, start in starts.items():
        base = start.offset
        for split in sorted(s for p, s in n if p == partition):
            bases.append((partition, split, base))
            base += n[(partition, split)]
    base_df = spark.createDataFrame(bases, "partition int, split int, base long")
    joined = rows.join(F.broadcast(base_df), ["partition", "split"])
    return joined.withColumn("offset", F.col("base") + F.col("ordinal")).drop("base"), starts
