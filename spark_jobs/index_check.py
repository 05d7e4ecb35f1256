"""kop's persisted offset index against the offsets recomputed from Pulsar: each
checkpoint (offset -> the entry it begins) and each mark (entry -> the offset
after it) must name what the Pulsar log says. kop counts whole entries, so a
claim names an entry (ledger, entry); the Pulsar view's messages carry their
batch index too."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.layout import PartitionLayout


def check_index(
    spark: SparkSession, layouts: list[PartitionLayout], starts: dict[int, int], pulsar: DataFrame
) -> tuple[dict[int, int], list[dict[str, Any]]]:
    """Claims checked per partition, and the wrong ones (ordered by partition, offset).
    Claims below a partition's log start are not checked (kop prunes them later)."""
    claims = []
    for lay in layouts:
        start = starts[lay.partition]
        for c in lay.persisted.checkpoints.values():
            if c.offset >= start:
                claims.append((lay.partition, "checkpoint", c.offset, *c.position[:2]))
        m = lay.persisted.mark
        if m is not None and m.next_offset > start:
            claims.append((lay.partition, "mark", m.next_offset, *m.position[:2]))
    checked: dict[int, int] = {}
    for claim in claims:
        checked[claim[0]] = checked.get(claim[0], 0) + 1
    if not claims:
        return checked, []
    schema = "partition int, claim string, claimed long, ledger long, entry long"
    claim_df = spark.createDataFrame(claims, schema)
    entries = pulsar.groupBy("partition", "ledger", "entry").agg(
        F.min("offset").alias("first"), F.max("offset").alias("last")
    )
    found = claim_df.join(entries, ["partition", "ledger", "entry"], "left")
    expected = F.when(F.col("claim") == "mark", F.col("last") + 1).otherwise(F.col("first"))
    wrong = found.filter(F.col("first").isNull() | (expected != F.col("claimed")))
    rows = wrong.withColumn("recomputed", expected).orderBy("partition", "claimed").collect()
    return checked, [
        {"partition": r.partition, "kind": f"{r.claim} disagrees", "offset": r.claimed,
         "position": f"{r.ledger}:{r.entry}", "recomputed": r.recomputed}
        for r in rows
    ]  # fmt: skip
