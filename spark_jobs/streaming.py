"""The streaming materialization of replay-check: Structured Streaming through kop
with a checkpoint, stopped after a few micro-batches and started again from its
checkpoint, so the state it ends with went through a restart (and, in the test
suite, through kop being killed and restarted while it ran).

Every micro-batch appends a line to `batches.jsonl`: that is how a watcher (the
test) knows the stream is under way."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.events import parse_events, state
from spark_jobs.options import Stack
from spark_jobs.progress import say


class StreamRun:
    def __init__(self, spark: SparkSession, stack: Stack, work: Path, per_batch: int) -> None:
        self.spark = spark
        self.stack = stack
        self.checkpoint = work / "checkpoint"
        self.output = work / "stream-state"
        self.batches = work / "batches.jsonl"
        self.per_batch = per_batch
        for old in (self.checkpoint, self.output):
            shutil.rmtree(old, ignore_errors=True)
        self.batches.unlink(missing_ok=True)
        work.mkdir(parents=True, exist_ok=True)

    def _query(self, **trigger: Any) -> Any:
        source = (
            self.spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.stack.bootstrap)
            .option("subscribe", self.stack.topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(self.per_batch))
            .option("failOnDataLoss", "true")
            # ride out a gateway restart: the driver asks for offsets again
            .option("fetchOffset.numRetries", "120")
            .option("fetchOffset.retryIntervalMs", "1000")
            .load()
        )
        records = source.select(
            "partition", "offset", F.unix_millis("timestamp").alias("timestamp"), "value"
        )
        output, batches = str(self.output), self.batches

        def sink(df: DataFrame, batch_id: int) -> None:
            df.write.mode("overwrite").parquet(output)
            with batches.open("a") as f:
                f.write(json.dumps({"batch": batch_id, "at": time.time()}) + "\n")

        return (
            state(parse_events(records))
            .writeStream.outputMode("complete")
            .foreachBatch(sink)
            .option("checkpointLocation", str(self.checkpoint))
            .trigger(**trigger)
            .start()
        )

    def done_batches(self) -> int:
        return len(self.batches.read_text().splitlines()) if self.batches.exists() else 0

    def run(self, stop_after: int, within_s: float = 600.0) -> tuple[DataFrame, dict[str, int]]:
        """Run until `stop_after` micro-batches are done, stop, then restart from the
        checkpoint and run to the end of the topic."""
        query = self._query(processingTime="0 seconds")
        deadline = time.monotonic() + within_s
        while self.done_batches() < stop_after:
            if query.exception() is not None or not query.isActive:
                raise RuntimeError(f"the stream failed: {query.exception()}")
            if time.monotonic() > deadline:
                query.stop()
                raise TimeoutError(f"{stop_after} micro-batches not done in {within_s:.0f} s")
            time.sleep(0.2)
        query.stop()
        before = self.done_batches()
        say(f"stream stopped after {before} micro-batches; restarting from its checkpoint")
        query = self._query(availableNow=True)
        query.awaitTermination(within_s)
        if query.isActive:
            query.stop()
            raise TimeoutError(f"the restarted stream did not finish in {within_s:.0f} s")
        if query.exception() is not None:
            raise RuntimeError(f"the restarted stream failed: {query.exception()}")
        counts = {"before_restart": before, "after_restart": self.done_batches() - before}
        return self.spark.read.parquet(str(self.output)), counts
