"""Transactions on a real Pulsar, with unmodified clients: the Java client's
read-process-write loop stays exactly-once while kop is killed with -9 under it;
confluent-kafka, kafka-python, aiokafka, franz-go and Sarama commit, abort and get
fenced."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from conformance.clients.transactional import FLOWS
from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess
from tests.integration.maven import CACHES
from tests.integration.test_java_client import JAVA_DIR, java_classpath  # noqa: F401

PARTITIONS = 2
REPO = Path(__file__).resolve().parents[2]
KAFKA_LIB = CACHES / "kafka-4.3.1" / "lib"


def read_committed(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[bytes]:
    """Every record up to the end each partition has at `isolation` (the last stable
    offset for read_committed)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
        "isolation.level": isolation, "enable.auto.commit": False,
    })  # fmt: skip
    try:
        out: list[bytes] = []
        for p in range(PARTITIONS):
            _, end = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            if end == 0:
                continue
            consumer.assign([TopicPartition(topic, p, 0)])
            deadline = time.monotonic() + 60
            while consumer.position([TopicPartition(topic, p)])[0].offset < end:
                assert time.monotonic() < deadline, f"partition {p} not read to {end}"
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    out.append(msg.value())
        return out
    finally:
        consumer.close()


# kafka-clients 3.9 adds partitions explicitly (transaction version 1); 4.3.1 uses
# transaction version 2, which kop finalizes: implicit adds, an epoch bump at every end.
@pytest.mark.parametrize("clients", ["3.9.1", "4.3.1"])
def test_java_read_process_write_is_exactly_once_across_kill9(
    fresh_kop: KopProcess,
    java_classpath: str,  # noqa: F811
    tmp_path: Path,
    clients: str,
) -> None:
    if clients == "4.3.1":
        java_classpath = f"{KAFKA_LIB}/*"  # the reference Kafka's distribution (make test)
        assert (KAFKA_LIB / "kafka-clients-4.3.1.jar").exists(), KAFKA_LIB
    run = uuid.uuid4().hex[:8]
    source, sink, n = f"rpw-in-{run}", f"rpw-out-{run}", 4000
    create_topic(fresh_kop.bootstrap, source, partitions=PARTITIONS)
    create_topic(fresh_kop.bootstrap, sink, partitions=PARTITIONS)
    values = [f"v{i}".encode() for i in range(n)]
    p = Producer({"bootstrap.servers": fresh_kop.bootstrap, "enable.idempotence": True})
    for i, v in enumerate(values):
        p.produce(source, v, partition=i % PARTITIONS)
    assert p.flush(60) == 0
    app_log = tmp_path / "app.log"
    with app_log.open("w") as sink_file:
        app = subprocess.Popen(
            ["java", "-cp", java_classpath, str(JAVA_DIR / "ReadProcessWrite.java"),
             fresh_kop.bootstrap, source, sink, f"rpw-{run}", f"rpw-{run}", "150"],
            stdout=sink_file, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    kills = 0
    watch = Watch(app, app_log, fresh_kop)
    try:
        for fraction in (0.2, 0.45, 0.7):  # kill -9 as the output grows past each
            watch.until(lambda f=fraction: output_end(fresh_kop.bootstrap, sink) >= n * f,  # type: ignore[misc]
                        f"output past {fraction:.0%} after {kills} kills")  # fmt: skip
            fresh_kop.kill9()
            kills += 1
            fresh_kop.start()
        watch.until(lambda: app.poll() is not None, "the application's end", timeout=600)
    finally:
        app.kill()
        app.wait(10)
    out = app_log.read_text()
    assert app.returncode == 0 and "DONE" in out, watch.report()
    got = Counter(read_committed(fresh_kop.bootstrap, sink))
    expected = Counter(b"out-" + v for v in values)
    # (whether the application had to start over depends on where each kill landed)
    assert got == expected, (
        f"missing {len(expected - got)}, duplicated {len(got - expected)} after {kills} "
        f"kills; the application started over {out.count('RESTART')} times"
    )


def output_end(bootstrap: str, topic: str) -> int:
    """The output's high watermarks, summed (markers included): progress."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        )
    except KafkaException:
        return 0
    finally:
        consumer.close()


class Watch:
    """Waits on the application with a deadline; a failure shows what the application
    and kop printed last, since a stall is only understood from both."""

    def __init__(self, app: subprocess.Popen[str], app_log: Path, kop: KopProcess) -> None:
        self.app, self.app_log, self.kop = app, app_log, kop

    def until(self, check: Callable[[], bool], what: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if self.app.poll() is not None:
                pytest.fail(f"the application ended before {what}\n{self.report()}")
            if time.monotonic() > deadline:
                pytest.fail(f"not within {timeout:.0f} s: {what}\n{self.report()}")
            time.sleep(0.2)

    def report(self) -> str:
        return (
            f"--- application ---\n{self.app_log.read_text()[-4000:]}\n"
            f"--- kop ---\n{self.kop.log_text()[-6000:]}"
        )


# -- Python clients: commit, abort, a fenced zombie (conformance/clients/transactional.py)


FENCED = {
    "confluent-kafka": {"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"},
    "kafka-python": {"ProducerFencedError", "InvalidProducerEpochError", "KafkaError"},
    "aiokafka": {"ProducerFenced", "InvalidProducerEpoch", "KafkaError"},
    "franz-go": {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"},
    "sarama": {"ErrProducerFenced", "ErrInvalidProducerEpoch"},
}


# (kafkajs's flow runs in the conformance matrix only: make test installs no npm modules)
@pytest.mark.parametrize("client", sorted(FENCED))
def test_commit_abort_and_a_fenced_zombie(kop: KopProcess, client: str) -> None:
    topic = f"txn-{client}-{uuid.uuid4().hex[:8]}"
    create_topic(kop.bootstrap, topic, partitions=PARTITIONS)
    fenced = FLOWS[client](kop.bootstrap, topic, f"t-{uuid.uuid4().hex[:8]}")
    assert fenced in FENCED[client]
    assert sorted(read_committed(kop.bootstrap, topic)) == [b"c1", b"c2", b"c3"]
    everything = sorted(read_committed(kop.bootstrap, topic, "read_uncommitted"))
    assert everything == [b"a1", b"c1", b"c2", b"c3", b"zombie"]


def _transactions_tool(bootstrap: str, *args: str) -> str:
    """Kafka's own kafka-transactions, from the reference distribution, against kop."""
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "kafka.py"), "tool", "transactions",
         "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_kafka_transactions_lists_describes_and_aborts_a_hanging_transaction(
    kop: KopProcess,
) -> None:
    """An open transaction shows in `list`, `describe` and `describe-producers`; `abort`
    at its partition (what an operator does for a transaction its coordinator no longer
    knows) writes the marker, and read_committed readers get past it."""
    topic, txn_id = f"txn-tool-{uuid.uuid4().hex[:8]}", f"tool-{uuid.uuid4().hex[:8]}"
    create_topic(kop.bootstrap, topic, partitions=PARTITIONS)
    p = Producer({"bootstrap.servers": kop.bootstrap, "transactional.id": txn_id})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    assert p.flush(30) == 0
    listed = _transactions_tool(kop.bootstrap, "list")
    assert any(txn_id in line and "Ongoing" in line for line in listed.splitlines()), listed
    described = _transactions_tool(kop.bootstrap, "describe", "--transactional-id", txn_id)
    assert "Ongoing" in described and f"{topic}-0" in described, described
    producers = _transactions_tool(kop.bootstrap, "describe-producers", "--topic", topic,
                                   "--partition", "0")  # fmt: skip
    row = [line.split() for line in producers.splitlines()[1:] if line.strip()]
    assert row and row[0][-1] == "0", producers  # CurrentTransactionStartOffset
    assert read_committed(kop.bootstrap, topic) == []  # held at the open transaction
    _transactions_tool(kop.bootstrap, "abort", "--topic", topic, "--partition", "0",
                       "--start-offset", "0")  # fmt: skip
    plain = Producer({"bootstrap.servers": kop.bootstrap})
    plain.produce(topic, b"plain", partition=0)
    assert plain.flush(30) == 0
    assert read_committed(kop.bootstrap, topic) == [b"plain"]
    p.abort_transaction(30)  # the coordinator's own end adds nothing at partition 0
    assert read_committed(kop.bootstrap, topic) == [b"plain"]
