"""A well-behaved client beside the fuzzer: produces a record every `interval_s`
with librdkafka (confluent-kafka) and reports how long each took to be
acknowledged. Run in a process of its own (`python -m fuzz.steady`), so that the
fuzzer's own work does not count as kop's latency; SIGINT ends it early, and it
still reports."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, Producer


def run(bootstrap: str, topic: str, seconds: float, interval_s: float) -> dict[str, object]:
    latencies: list[float] = []
    errors: list[str] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0, "message.timeout.ms": 30000}
    )

    def report_to(sent: float) -> Callable[[KafkaError | None, object], None]:
        def done(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                latencies.append(time.monotonic() - sent)

        return done

    stopped: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: stopped.append(signum))
    deadline = time.monotonic() + seconds
    next_send = time.monotonic()
    while time.monotonic() < deadline and not stopped:
        producer.produce(topic, b"steady", on_delivery=report_to(time.monotonic()))
        next_send += interval_s
        while (wait := next_send - time.monotonic()) > 0 and not stopped:
            producer.poll(wait)
    producer.flush(30)
    ordered = sorted(latencies)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")

    return {
        "acknowledged": len(ordered),
        "errors": len(errors),
        "first_errors": errors[:5],
        "p50_ms": pct(0.50) * 1000,
        "p99_ms": pct(0.99) * 1000,
        "max_ms": (ordered[-1] if ordered else float("nan")) * 1000,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.steady")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="fuzz-steady")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--interval", type=float, default=0.02)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.bootstrap, args.topic, args.seconds, args.interval)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
