"""validate-offsets: the Kafka view through kop and the Pulsar view straight from
Pulsar hold the same records at the same offsets.

Checks, per partition:
- every Kafka offset maps to exactly one Pulsar record and back (a full outer
  join on (partition, offset), the Pulsar side's offsets recomputed by
  spark_jobs.offsets), and no Kafka offset comes twice;
- key, value, timestamp and headers are equal;
- Kafka offsets are dense from the log start (the recomputed start, or kop's
  DeleteRecords floor above it), but for the transactions' markers, which take an
  offset and are no record; Pulsar positions strictly increase;
- kop's persisted offset-index checkpoints and mark name the positions the
  recomputed offsets say.

The topic must not be written to while it runs (both views are read to their
end at the start).
"""

from __future__ import annotations

from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.index_check import check_index
from spark_jobs.kafka_admin import KafkaAdmin
from spark_jobs.layout import PartitionLayout, topic_layout
from spark_jobs.offsets import with_offsets
from spark_jobs.options import Stack
from spark_jobs.progress import Phases, say
from spark_jobs.report import draw_counts_and_rates, write_report
from spark_jobs.views import RECORD, kafka_view, pulsar_rows, records_only

FIELDS = ("key", "value", "timestamp", "headers")
SHOWN = 20  # mismatches listed in the report


def validate_offsets(
    spark: SparkSession, stack: Stack, *, split_entries: int, min_partitions: int | None
) -> bool:
    phases = Phases(spark.sparkContext)
    try:
        with phases.phase("plan"):
            layouts = topic_layout(stack, split_entries)
        with phases.phase("read Pulsar view") as p:
            pulsar = with_offsets(spark, pulsar_rows(spark, stack, layouts), layouts)
            pulsar = pulsar.persist(StorageLevel.MEMORY_AND_DISK)
            p["records"] = pulsar.count()
        with phases.phase("wait for kop to count what Pulsar holds"):
            ends = _recomputed_ends(pulsar)
            admin = KafkaAdmin(spark, stack.bootstrap)
            try:
                admin.caught_up(stack.topic, len(layouts), lambda e: _reached(e, ends))
            finally:
                admin.close()
        with phases.phase("read Kafka view") as p:
            # a missing offset is for this job to report, not for Spark to fail on
            kafka = kafka_view(spark, stack, min_partitions=min_partitions, lossy=True)
            kafka = kafka.persist(StorageLevel.MEMORY_AND_DISK)
            p["records"] = kafka.count()
        with phases.phase("compare") as p:
            checks = _Checks(spark, layouts, kafka, pulsar)
            report = checks.run()
            p["records"] = report["records"]["kafka"] + report["records"]["pulsar"]
    finally:
        phases.close()
    report["timings"] = phases.timings
    report["topic"] = stack.topic
    ok = not report["failures"]
    report["ok"] = ok
    counts = {
        "Kafka view": {int(k): v["kafka_records"] for k, v in report["partitions"].items()},
        "Pulsar view": {int(k): v["pulsar_records"] for k, v in report["partitions"].items()},
    }
    write_report(
        stack.report_dir,
        "validate-offsets",
        report,
        lambda fig: draw_counts_and_rates(fig, stack.topic, counts, phases.timings),
    )
    for failure in report["failures"]:
        say(f"FAILED: {failure}")
    for mismatch in report["first_mismatches"][:5]:
        say(f"  {mismatch}")
    say("validate-offsets: " + ("the two views agree" if ok else "the views DISAGREE"))
    return ok


class _Checks:
    def __init__(
        self,
        spark: SparkSession,
        layouts: list[PartitionLayout],
        kafka: DataFrame,
        pulsar: DataFrame,
    ) -> None:
        self.spark = spark
        self.layouts = layouts
        self.kafka = kafka
        self.pulsar = pulsar
        self.failures: list[str] = []
        self.partitions: dict[int, dict[str, Any]] = {
            lay.partition: {
                "pulsar_topic": lay.topic,
                "kafka_records": 0,
                "pulsar_records": 0,
                "log_start": 0,
                "floor": lay.persisted.floor,
                "splits": len(lay.splits),
            }
            for lay in layouts
        }

    def run(self) -> dict[str, Any]:
        visible = records_only(self._above_floor())
        mismatches = self._join(visible)
        self._density()
        self._order()
        bad_checkpoints = self._checkpoints()
        return {
            "records": {"kafka": self._sum("kafka_records"), "pulsar": self._sum("pulsar_records")},
            "partitions": {str(k): v for k, v in sorted(self.partitions.items())},
            "failures": self.failures,
            "first_mismatches": mismatches + bad_checkpoints,
        }

    def _sum(self, name: str) -> int:
        return sum(int(v[name]) for v in self.partitions.values())

    def _above_floor(self) -> DataFrame:
        """The Pulsar records Kafka clients may see: DeleteRecords hides those below
        kop's floor, which Pulsar still holds."""
        floors = [(lay.partition, lay.persisted.floor) for lay in self.layouts]
        floor_df = self.spark.createDataFrame(floors, "partition int, floor long")
        joined = self.pulsar.join(F.broadcast(floor_df), "partition")
        return joined.filter(F.col("offset") >= F.col("floor")).drop("floor")

    def _join(self, visible: DataFrame) -> list[dict[str, Any]]:
        k = self.kafka.select(*[F.col(c).alias(f"k_{c}") for c in RECORD])
        p = visible.select(
            *[F.col(c).alias(f"p_{c}") for c in [*RECORD, "ledger", "entry", "batch"]]
        )
        on = (F.col("k_partition") == F.col("p_partition")) & (
            F.col("k_offset") == F.col("p_offset")
        )
        joined = k.join(p, on, "full_outer")
        differing = [F.when(~F.col(f"k_{f}").eqNullSafe(F.col(f"p_{f}")), F.lit(f)) for f in FIELDS]
        kind = (
            F.when(F.col("p_offset").isNull(), F.lit("only in the Kafka view"))
            .when(F.col("k_offset").isNull(), F.lit("only in the Pulsar view"))
            .otherwise(F.lit("differs"))
        )
        classified = (
            joined.withColumn("partition", F.coalesce("k_partition", "p_partition"))
            .withColumn("offset", F.coalesce("k_offset", "p_offset"))
            .withColumn("fields", F.array_compact(F.array(*differing)))
            .withColumn("kind", kind)
            .filter(
                F.col("p_offset").isNull() | F.col("k_offset").isNull() | (F.size("fields") > 0)
            )
        ).persist(StorageLevel.MEMORY_AND_DISK)
        for r in classified.groupBy("partition", "kind").count().collect():
            self.partitions[r.partition][r.kind] = r["count"]
            self.failures.append(f"partition {r.partition}: {r['count']} records {r.kind}")
        first = classified.orderBy("partition", "offset").limit(SHOWN).collect()
        classified.unpersist()
        return [_describe(r) for r in first]

    def _density(self) -> None:
        stats = self.kafka.groupBy("partition").agg(
            F.count("*").alias("n"),
            F.countDistinct("offset").alias("distinct"),
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
        )
        counted = records_only(self.pulsar).groupBy("partition").count().collect()
        pulsar_n: dict[int, int] = {r.partition: r["count"] for r in counted}
        markers = self._markers_within(stats)
        for lay in self.layouts:
            info = self.partitions[lay.partition]
            info["pulsar_records"] = int(pulsar_n.get(lay.partition, 0))
            info["log_start"] = max(lay.start, info["floor"])
            info["log_start_from_checkpoint"] = lay.anchored
        for r in stats.collect():
            info = self.partitions[r.partition]
            info.update(kafka_records=r.n, first_offset=r.first, last_offset=r.last)
            if r.distinct != r.n:
                self.failures.append(f"partition {r.partition}: {r.n - r.distinct} offsets twice")
            info["markers"] = markers.get(r.partition, 0)
            if r.last - r.first + 1 != r.distinct + info["markers"]:
                gaps = r.last - r.first + 1 - r.distinct - info["markers"]
                self.failures.append(
                    f"partition {r.partition}: {gaps} gaps in offsets {r.first}..{r.last}"
                )
            if r.first != info["log_start"]:
                self.failures.append(
                    f"partition {r.partition}: Kafka view starts at {r.first}, "
                    f"the log start is {info['log_start']}"
                )

    def _markers_within(self, stats: DataFrame) -> dict[int, int]:
        """Per partition, the transaction markers between the Kafka view's first and
        last offsets: each takes an offset no consumer is given a record at."""
        spans = stats.select("partition", "first", "last")
        markers = self.pulsar.filter(F.col("control").isNotNull()).join(spans, "partition")
        within = markers.filter(F.col("offset").between(F.col("first"), F.col("last")))
        return {r.partition: r["count"] for r in within.groupBy("partition").count().collect()}

    def _order(self) -> None:
        for r in self.pulsar.filter(~F.col("in_order")).groupBy("partition").count().collect():
            self.failures.append(
                f"partition {r.partition}: {r['count']} Pulsar positions out of order"
            )

    def _checkpoints(self) -> list[dict[str, Any]]:
        starts = {pid: info["log_start"] for pid, info in self.partitions.items()}
        checked, wrong = check_index(self.spark, self.layouts, starts, self.pulsar)
        for pid, info in self.partitions.items():
            info["checkpoints_checked"] = checked.get(pid, 0)
        for w in wrong:
            says = "holds no such message" if w["recomputed"] is None else f"says {w['recomputed']}"
            self.failures.append(
                f"partition {w['partition']}: kop's {w['kind'].split()[0]} says offset "
                f"{w['offset']} at {w['position']}, the Pulsar log {says}"
            )
        return wrong[:SHOWN]


def _recomputed_ends(pulsar: DataFrame) -> dict[int, int]:
    rows = pulsar.groupBy("partition").agg(F.max("offset").alias("last")).collect()
    return {r.partition: r.last + 1 for r in rows}


def _reached(ends: dict[int, int], wanted: dict[int, int]) -> bool:
    return all(ends.get(p, 0) >= n for p, n in wanted.items())


def _describe(r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"partition": r.partition, "offset": r.offset, "kind": r.kind}
    if r.p_ledger is not None:
        out["position"] = f"{r.p_ledger}:{r.p_entry}:{r.p_batch}"
    if r.kind == "differs":
        out["fields"] = list(r.fields)
        for f in r.fields:
            out[f"kafka_{f}"] = _show(r[f"k_{f}"])
            out[f"pulsar_{f}"] = _show(r[f"p_{f}"])
    return out


def _show(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value[:80]).decode("utf-8", "backslashreplace")
    if isinstance(value, list):
        return [[h["key"], _show(h["value"])] for h in value]
    return value
