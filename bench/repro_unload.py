"""Reconnect check: produce through kop while Pulsar unloads the topic, then verify.

    python -m bench.repro_unload [--format kafka|pulsar] [--records N] [--unloads K]

Starts kop, creates a 1-partition topic, produces N records (confluent-kafka,
acks=all, idempotent with --idempotent) and meanwhile unloads the Pulsar partition K times
(`PUT /admin/v2/persistent/public/default/<topic>-partition-0/unload`), which
makes kop's Pulsar producer and tail reader reconnect, as a broker restart or a
bundle move would. Then it reads the topic from offset 0 and checks that offset i
holds record i. Exit status 1 when records are missing, duplicated or reordered.
Found while benchmarking; see docs/benchmarks.md ("Bugs seen").
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import urllib.request

from bench import kafka_side
from bench.common import Values, Workload, log
from bench.kop_process import REPO, KopProcess


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--format", choices=("kafka", "pulsar"), default="kafka")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--unloads", type=int, default=4)
    ap.add_argument("--idempotent", action="store_true", help="enable.idempotence=true")
    ap.add_argument("--http-url", default="http://localhost:8080")
    ap.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    args = ap.parse_args(argv)
    w = Workload(records=args.records, max_phase_s=300)
    values = Values(w.value_bytes)
    kop = KopProcess(REPO / "bench" / "results" / "repro-kop.log",
                     pulsar_url=args.pulsar_url, http_url=args.http_url)  # fmt: skip
    kop.start()
    topic = f"repro-{args.format}-{int(time.time())}"
    done = threading.Event()

    def unload() -> None:
        url = f"{args.http_url}/admin/v2/persistent/public/default/{topic}-partition-0/unload"
        for _ in range(args.unloads):
            if done.wait(1.0):
                return
            try:
                with urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=30):
                    log(f"unloaded {topic}")
            except OSError as exc:
                log(f"unload failed: {exc}")

    try:
        kafka_side.create_topics(kop.bootstrap, {topic: args.format})
        t = threading.Thread(target=unload, daemon=True)
        t.start()
        extra = {"enable.idempotence": args.idempotent}
        sent, _, errors = kafka_side.produce(
            kop.bootstrap, topic, w, values, w.records, "produce", extra=extra
        )
        done.set()
        t.join()
        got, _, bad, note = kafka_side.consume(
            kop.bootstrap, topic, w, values, sent - errors, "consume"
        )
        kafka_side.delete_topics(kop.bootstrap, [topic])
    finally:
        done.set()
        kop.stop()
    mode = "idempotent" if args.idempotent else "not idempotent"
    print(f"{args.format} ({mode}): produced {sent:,} (errors {errors}), read {got:,}, ", end="")
    print(f"bad {bad:,} {note}")
    print(f"kop log: {kop.log_path.relative_to(REPO)}")
    return 1 if bad or errors or got != sent - errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
