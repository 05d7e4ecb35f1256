"""replay-check: one event-sourced state (per entity: events, balance, last event),
materialized four ways that must agree exactly:

1. a batch over all history through kop;
2. Structured Streaming through kop, stopped and restarted from its checkpoint;
3. rollback and replay: the state as of offsets (and as of a time) X, replayed
   through kop up to X, equals (1) restricted to the events before X;
4. the same over the Pulsar view (spark_jobs.pulsar_source);

and, for a topic with transactions, committed records only two ways that must agree:
5. read_committed through kop, and the Pulsar view filtered as a Pulsar application
   filters it (spark_jobs.views.committed).
"""

from __future__ import annotations

import math
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.events import parse_events, state
from spark_jobs.layout import topic_layout
from spark_jobs.offsets import with_offsets
from spark_jobs.options import Stack
from spark_jobs.progress import Phases, say
from spark_jobs.report import draw_counts_and_rates, write_report
from spark_jobs.streaming import StreamRun
from spark_jobs.views import committed, kafka_view, pulsar_rows, records_only

SHOWN = 5


def replay_check(
    spark: SparkSession, stack: Stack, *, split_entries: int, stream_batches: int, stop_after: int
) -> bool:
    phases = Phases(spark.sparkContext)
    results: dict[str, dict[str, Any]] = {}
    try:
        with phases.phase("1. batch through kop") as p:
            events = parse_events(kafka_view(spark, stack)).persist(StorageLevel.MEMORY_AND_DISK)
            p["records"] = total = events.count()
            truth = state(events).persist(StorageLevel.MEMORY_AND_DISK)
            entities = truth.count()
        with phases.phase("2. streaming through kop, restarted", total):
            per_batch = max(1, math.ceil(total / stream_batches))
            run = StreamRun(spark, stack, stack.report_dir / "replay-check", per_batch)
            streamed, batches = run.run(stop_after)
            results["streaming"] = {**_diff(truth, streamed), "micro_batches": batches}
        with phases.phase("3. rollback and replay through kop") as p:
            results.update(_rollbacks(spark, stack, events))
            p["records"] = sum(r["events"] for k, r in results.items() if k.startswith("as of"))
        with phases.phase("4. the Pulsar view", total):
            layouts = topic_layout(stack, split_entries)
            rows = with_offsets(spark, pulsar_rows(spark, stack, layouts), layouts)
            rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
            results["pulsar view"] = _diff(truth, state(parse_events(records_only(rows))))
        with phases.phase("5. committed only: read_committed and the Pulsar view") as p:
            results["committed only"] = _committed(spark, stack, rows, total)
            p["records"] = results["committed only"]["events"]
        per_partition = {
            r.partition: r["count"] for r in events.groupBy("partition").count().collect()
        }
    finally:
        phases.close()
    ok = all(r["differing_entities"] == 0 for r in results.values())
    report = {
        "topic": stack.topic,
        "events": total,
        "entities": entities,
        "materializations": results,
        "timings": phases.timings,
        "ok": ok,
    }
    write_report(
        stack.report_dir,
        "replay-check",
        report,
        lambda fig: draw_counts_and_rates(
            fig, stack.topic, {"events": per_partition}, phases.timings
        ),
    )
    for name, r in results.items():
        verdict = (
            "agrees"
            if r["differing_entities"] == 0
            else f"{r['differing_entities']} entities DIFFER"
        )
        say(f"{name}: {verdict}")
        for d in r["first_differences"]:
            say(f"  {d}")
    say("replay-check: " + ("all materializations agree" if ok else "they DISAGREE"))
    return ok


def _committed(spark: SparkSession, stack: Stack, rows: DataFrame, total: int) -> dict[str, Any]:
    """Committed records through kop (read_committed) against the Pulsar view
    filtered; `dropped`: the records of aborted (or still open) transactions."""
    through_kop = parse_events(kafka_view(spark, stack, committed=True))
    through_kop = through_kop.persist(StorageLevel.MEMORY_AND_DISK)
    kept = through_kop.count()
    filtered = parse_events(committed(rows))
    return {
        **_diff(state(filtered), state(through_kop)),
        "events": kept,
        "dropped": total - kept,
        "pulsar_view_events": filtered.count(),
    }


def _rollbacks(spark: SparkSession, stack: Stack, events: DataFrame) -> dict[str, dict[str, Any]]:
    """Cuts at a third and two thirds of each partition, and at the median timestamp
    (Kafka's rule: a partition ends at its first record at or after the time)."""
    bounds = events.groupBy("partition").agg(
        F.min("offset").alias("lo"), F.max("offset").alias("hi")
    )
    spans = {r.partition: (r.lo, r.hi + 1) for r in bounds.collect()}
    out: dict[str, dict[str, Any]] = {}
    for share in (1 / 3, 2 / 3):
        cut = {p: lo + int((hi - lo) * share) for p, (lo, hi) in spans.items()}
        label = f"as of offsets {share:.0%} in"
        out[label] = _replay(spark, stack, events, cut, cut)
    (median,) = events.approxQuantile("timestamp", [0.5], 0.0)
    at = int(median)
    firsts = events.filter(F.col("timestamp") >= at).groupBy("partition").agg(F.min("offset"))
    cut = {p: hi for p, (_lo, hi) in spans.items()} | {r[0]: r[1] for r in firsts.collect()}
    out[f"as of time {at}"] = _replay(
        spark, stack, events, cut, {p: at for p in spans}, by_time=True
    )
    return out


def _replay(
    spark: SparkSession,
    stack: Stack,
    events: DataFrame,
    cut: dict[int, int],
    ending: dict[int, int],
    by_time: bool = False,
) -> dict[str, Any]:
    cuts = spark.createDataFrame(list(cut.items()), "partition int, cut long")
    before = events.join(F.broadcast(cuts), "partition").filter(F.col("offset") < F.col("cut"))
    replayed = parse_events(kafka_view(spark, stack, ending=ending, by_time=by_time))
    return {**_diff(state(before), state(replayed)), "events": before.count(), "cut": cut}


def _diff(expected: DataFrame, actual: DataFrame) -> dict[str, Any]:
    cols = [c for c in expected.columns if c != "entity"]
    e = expected.select("entity", *[F.col(c).alias(f"e_{c}") for c in cols])
    a = actual.select("entity", *[F.col(c).alias(f"a_{c}") for c in cols])
    same = F.lit(True)
    for c in cols:
        same = same & F.col(f"e_{c}").eqNullSafe(F.col(f"a_{c}"))
    differing = e.join(a, "entity", "full_outer").filter(~same)
    count = differing.count()
    first = differing.orderBy("entity").limit(SHOWN).collect() if count else []
    return {
        "entities": actual.count(),
        "differing_entities": count,
        "first_differences": [r.asDict() for r in first],
    }
