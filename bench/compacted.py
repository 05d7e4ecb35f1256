"""Fetch of a compacted topic from offset 0, kop against the reference Kafka, in one run
(`python -m bench.compacted`, or `python -m bench --compacted`).

One topic with cleanup.policy=compact, `--records` writes (16-byte keys, 1 KiB
incompressible values) over `--keys` keys in a seeded random order, each key written
equally often. Then one confluent-kafka consumer reads partition 0 from offset 0 to
the end, checking every record's value and each key's last offset:

- kop, whole log: every live ledger still there (kop serves them in full);
- kop, compacted view: once kop's compaction cycle has noted every survivor (its pin
  subscription reads the last entry), the live ledgers are deleted as retention
  would (unload, then truncate): only Pulsar's compacted ledger holds the records;
- Kafka 4.3.1, whole log: the same writes to a compacted topic with Kafka's default
  1 GiB segments (one active segment, which the cleaner never touches);
- Kafka 4.3.1, cleaned: a topic whose cleaner runs quickly (1 MiB segments,
  segment.ms=100, min.cleanable.dirty.ratio=0.01, delete.retention.ms=100), read once
  a read from 0 returns about `--keys` records (the cleaner ran; the active segment
  stays uncleaned, as Kafka leaves it).

kop runs with KOP_COMPACTION_INTERVAL_S=2 and is started afresh before each of its
views, so its resident set at the start does not carry the writes. Each view is read
twice: the rates are the second read's (a fresh kop's first read also pays for lazy
imports and its first Pulsar reader; its time is shown as "first read"). The
server's RSS is sampled every 50 ms during both reads: kop streams the compacted
view, so the peak must not grow with the compacted ledger (shown beside it).

Progress (rates every 2 s) goes to stderr; the table to stdout; the figures to
bench/results/compacted.json and, with --write, to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from bench import compacted_report, refkafka
from bench.common import Values, find_kafka_pid, log
from bench.compacted_pulsar import PulsarPartition, kop_metric, wait_until
from bench.compacted_side import (
    Expected,
    KeyedWorkload,
    ReadResult,
    check,
    create_topic,
    delete_topics,
    read_from_start,
    read_twice,
)
from bench.compacted_side import produce as produce_keyed
from bench.kop_process import REPO, KopProcess, free_port
from bench.refkafka import RefKafka

RESULTS = REPO / "bench" / "results"
KAFKA_CLEANER = {
    "cleanup.policy": "compact", "segment.bytes": str(1 << 20), "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100",
}  # fmt: skip


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.compacted", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--targets", default="kop,kafka", help="comma list of kop, kafka")
    ap.add_argument(
        "--pulsar-url", default=os.environ.get("KOP_PULSAR_SERVICE_URL", "pulsar://localhost:6650")
    )
    ap.add_argument(
        "--http-url", default=os.environ.get("KOP_PULSAR_HTTP_URL", "http://localhost:8080")
    )
    ap.add_argument(
        "--clean-timeout-s",
        type=float,
        default=300.0,
        help="how long to wait for Kafka's cleaner and kop's compaction",
    )
    ap.add_argument("--keep-topics", action="store_true", help="do not delete the topics")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    return ap.parse_args(argv)  # fmt: skip


class KopSide:
    """kop's two rows: one topic, a kop started afresh for each read."""

    def __init__(self, args: argparse.Namespace, w: KeyedWorkload, values: Values) -> None:
        self.args, self.w, self.values = args, w, values
        self.topic = f"bench-compacted-{time.strftime('%Y%m%d-%H%M%S')}"
        self.pulsar = PulsarPartition(args.http_url, self.topic)
        self.admin_port = free_port()
        self.compacted_bytes = 0
        self.exit_codes: list[int | None] = []

    def _kop(self) -> KopProcess:
        return KopProcess(
            RESULTS / "compacted-kop.log", pulsar_url=self.args.pulsar_url,
            http_url=self.args.http_url, extra_args=["--admin-port", str(self.admin_port)],
            env={"KOP_COMPACTION_INTERVAL_S": "2", "KOP_RETENTION_CHECK_S": "1"},
        )  # fmt: skip

    def write(self) -> None:
        with self._kop() as kop:
            create_topic(kop.bootstrap, self.topic, {"cleanup.policy": "compact"})
            produce_keyed(kop.bootstrap, self.topic, self.w, self.values, "kop: write")
            log(f"  kop compactions so far: {kop_metric(self.admin_port, 'kop_compactions_total')}")
            wait_until("kop noted every survivor", self.pulsar.noted, self.args.clean_timeout_s)
            self.exit_codes.append(kop.stop())

    def read(self, view: str) -> ReadResult:
        kop = self._kop()
        kop.start()
        try:
            out, last, disorder = read_twice(
                kop.bootstrap,
                self.topic,
                f"kop: {view}",
                self.w.records,
                kop.pid,
                self.values,
                self.w.records if view == "whole log" else self.w.keys,
            )
        finally:
            self.exit_codes.append(kop.stop())
        out.target, out.view = "kop", view
        check(out, last, disorder, Expected.of(self.w), whole=view == "whole log")
        return out

    def run(self) -> list[ReadResult]:
        try:
            return self._rows()
        finally:
            if self.args.keep_topics:
                log(f"kept kop's topic {self.topic}")
            else:
                self._delete()

    def _rows(self) -> list[ReadResult]:
        self.write()
        rows = [self.read("whole log")]
        self.pulsar.delete_live_ledgers()
        self.compacted_bytes = self.pulsar.compacted_ledger_bytes()
        log(f"  live ledgers deleted: {self.pulsar.live_entries()} live entries left, "
            f"compacted ledger {self.compacted_bytes / 2**20:.1f} MiB")  # fmt: skip
        rows.append(self.read("compacted"))
        return rows

    def _delete(self) -> None:
        with self._kop() as kop:
            for err in delete_topics(kop.bootstrap, [self.topic]):
                log(f"warning: could not delete {err}")


def kafka_rows(args: argparse.Namespace, w: KeyedWorkload, values: Values) -> list[ReadResult]:
    """The reference Kafka's two rows (started here unless it runs already)."""
    ref = RefKafka()
    ref.start()
    boot = refkafka.bootstrap()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    whole, cleaned = f"bench-compacted-{stamp}-whole", f"bench-compacted-{stamp}-cleaned"
    want = Expected.of(w)
    try:
        create_topic(boot, whole, {"cleanup.policy": "compact"})
        create_topic(boot, cleaned, KAFKA_CLEANER)
        produce_keyed(boot, whole, w, values, "kafka: write (whole)")
        produce_keyed(boot, cleaned, w, values, "kafka: write (cleaned)")
        pid = find_kafka_pid()
        out, last, disorder = read_twice(boot, whole, "kafka: whole log", w.records, pid,
                                         values, w.records)  # fmt: skip
        out.target, out.view = "kafka", "whole log"
        check(out, last, disorder, want, whole=True)
        about = w.keys + 2 * ((1 << 20) // w.record_bytes + 1)  # + the uncleaned active segment

        def cleaned_enough() -> bool:
            got, *_ = read_from_start(boot, cleaned, "kafka: cleaner?", w.records, None, values,
                                      w.keys, progress=False)  # fmt: skip
            log(f"  kafka: a read from 0 returns {got.records:,} records (until <= {about:,})")
            return got.records <= about

        wait_until("Kafka's cleaner ran", cleaned_enough, args.clean_timeout_s, every_s=5)
        done, last, disorder = read_twice(boot, cleaned, "kafka: compacted", w.records,
                                          pid, values, w.keys)  # fmt: skip
        done.target, done.view = "kafka", "compacted"
        check(done, last, disorder, want, whole=False)
        return [out, done]
    finally:
        for err in [] if args.keep_topics else delete_topics(boot, [whole, cleaned]):
            log(f"warning: could not delete {err}")
        ref.stop()


def main(argv: list[str]) -> int:
    args = parse(argv)
    targets = {t.strip() for t in args.targets.split(",")}
    w = KeyedWorkload(args.records, args.keys, args.value_bytes)
    values = Values(w.value_bytes)
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    log(f"bench.compacted: {w.records:,} writes over {w.keys:,} keys, {w.key_bytes} B keys + "
        f"{w.value_bytes} B values; load average {compacted_report.load(load_start)}")  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows: list[ReadResult] = []
    kop_side: KopSide | None = None
    if "kop" in targets:
        kop_side = KopSide(args, w, values)
        rows += kop_side.run()
    if "kafka" in targets:
        rows += kafka_rows(args, w, values)
    doc: dict[str, Any] = compacted_report.document(
        w, rows, load_start, os.getloadavg(), time.perf_counter() - t0, args.http_url,
        kop_side.compacted_bytes if kop_side else 0,
        kop_side.exit_codes if kop_side else [], KAFKA_CLEANER,
    )  # fmt: skip
    (RESULTS / "compacted.json").write_text(json.dumps(doc, indent=2) + "\n")
    section = compacted_report.markdown(doc)
    print(section)
    if args.write:
        compacted_report.write_doc(doc, section)
    failed = any(r.problems for r in rows) or any(c not in (0, None) for c in doc["kop_exits"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
