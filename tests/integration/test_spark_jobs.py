"""kop-spark's jobs at small scale against the real Pulsar and kop: they agree when
the views agree, and fail, naming the first mismatch, when they do not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kop.log.offset_index import Checkpoint
from spark_jobs.session import EXCLUDES, KAFKA_PACKAGE, ivy_cache
from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, KopProcess, free_port
from tests.integration.forgery import (
    batch_with_deltas,
    forge_checkpoint,
    nth_position,
    write_straight_to_pulsar,
)

KOP_SPARK = str(Path(sys.executable).parent / "kop-spark")
SPARK_DIR = Path(__file__).resolve().parents[2] / "spark_jobs"
# The generated topics: EVENTS through Spark's sink, NATIVE by Pulsar producers, then
# TXN in transactions of 50, every third aborted (ABORTED events in all)
EVENTS, NATIVE, TXN, ABORTED = 20_000, 2_000, 1_500, 500
TOTAL = EVENTS + NATIVE + TXN
JOB_TIMEOUT = 600
# Every job here is small: its JVM compiling with C1 only and collecting with one
# thread spends about 40% less CPU (validate-offsets of 4,500 records: 57-62 s of
# CPU with the defaults, 33-38 s with these), and local[2] needs no more than two
# shuffle partitions (a streaming micro-batch keeps one state store per partition).
SMALL_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SMALL = {"KOP_SPARK_JAVA_OPTIONS": SMALL_JVM, "KOP_SPARK_SHUFFLE_PARTITIONS": "2"}


def small_env() -> dict[str, str]:
    return {**os.environ, **SMALL}


pytestmark = pytest.mark.timeout(900)


def kop_spark(job: str, gateway: KopProcess | str, topic: str, report_dir: Path, *args: str) -> Any:
    """A kop-spark job against a test kop (its bootstrap and system namespace), or
    against a bare bootstrap address."""
    bootstrap = gateway if isinstance(gateway, str) else gateway.bootstrap
    system = [] if isinstance(gateway, str) else ["--system-namespace", gateway.system_namespace]
    cmd = [
        KOP_SPARK, job, "--topic", topic, "--bootstrap", bootstrap, "--pulsar-url", PULSAR_URL,
        "--admin-url", PULSAR_HTTP, "--report-dir", str(report_dir), "--master", "local[2]",
        *system, *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT, env=small_env())


def _why(output: list[str]) -> str:
    """A failed Spark job's exceptions (its stack traces are thousands of lines), then
    the end of its output."""
    causes = [
        line for line in output if "Exception" in line and not line.lstrip().startswith("at ")
    ]
    return "".join(causes[:20]) + "\n...\n" + "".join(output)[-3000:]


def report(report_dir: Path, job: str) -> dict[str, Any]:
    return json.loads((report_dir / f"{job}.json").read_text())


def markers_written(generate_dir: Path) -> int:
    return int(report(generate_dir, "generate")["transactions"]["markers"])


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    found = admin.list_offsets(wanted)
    return {tp.partition: fut.result(30).offset for tp, fut in found.items()}


@pytest.fixture(scope="module", params=["pulsar", "kafka"])
def generated(
    request: pytest.FixtureRequest, kop: KopProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    """A topic in one entry format: EVENTS events written by Spark's Kafka sink
    through kop, NATIVE by native Pulsar producers, then TXN by the Java producer
    through kop in transactions of 50, every third aborted. One topic per format
    serves every check of both views (offsets, replay, committed only): each job run
    on it costs a Spark session, and a topic of its own per check cost four more."""
    fmt = request.param
    topic = f"spark-{fmt}-{uuid.uuid4().hex[:8]}"
    out = tmp_path_factory.mktemp(f"generate-{fmt}")
    done = kop_spark(
        "generate", kop, topic, out, "--events", str(EVENTS),
        "--pulsar-events", str(NATIVE), "--partitions", "3", "--entry-format", fmt,
        "--entities", "500", "--transactional", str(TXN), "--transaction-size", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    yield fmt, topic, out


def test_generate_writes_every_event_and_reports_its_rate(
    generated: tuple[str, str, Path], kop: KopProcess
) -> None:
    fmt, topic, out = generated
    ends = end_offsets(kop.bootstrap, topic, 3)
    found = report(out, "generate")
    assert found["events"]["transactional"] == {"committed": TXN - ABORTED, "aborted": ABORTED}
    markers = found["transactions"]["markers"]
    assert 30 <= markers <= 90  # one per transaction and partition it wrote to
    assert sum(ends.values()) == TOTAL + markers
    assert all(n > 0 for n in ends.values())
    assert found["entry_format"] == fmt
    assert {int(p): n for p, n in found["partitions"].items()} == ends
    sink = found["timings"]["write through kop (Spark Kafka sink)"]
    assert sink["records"] == EVENTS and sink["records_per_s"] > 0
    assert (out / "generate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_validate_offsets_finds_both_views_agree(
    generated: tuple[str, str, Path], kop: KopProcess, tmp_path: Path
) -> None:
    """Aborted transactions included: both views hold every record, and the
    transactions' markers take their offsets in both."""
    _fmt, topic, out = generated
    done = kop_spark("validate-offsets", kop, topic, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    found = report(tmp_path, "validate-offsets")
    assert found["ok"] and found["failures"] == []
    assert found["records"] == {"kafka": TOTAL, "pulsar": TOTAL}
    for part in found["partitions"].values():
        assert part["kafka_records"] == part["pulsar_records"] > 0
        assert part["first_offset"] == 0
        assert part["last_offset"] == part["kafka_records"] + part["markers"] - 1
        assert part["checkpoints_checked"] > 0
    counted = sum(p["markers"] for p in found["partitions"].values())
    assert 0 < counted <= markers_written(out)
    assert (tmp_path / "validate-offsets.png").exists()


def test_validate_offsets_reads_a_partition_as_many_entry_ranges(
    kop: KopProcess, tmp_path: Path
) -> None:
    """Unbatched, every record is an entry: 3,000 entries cut every 400 into 8 tasks,
    whose offsets only line up if each range's count is carried to the next."""
    topic = f"spark-split-{uuid.uuid4().hex[:8]}"
    create_topic(kop.bootstrap, topic, 1, configs={"kop.pulsar.batching": "false"})
    producer = Producer({"bootstrap.servers": kop.bootstrap, "linger.ms": 5})
    for i in range(3000):
        producer.produce(topic, key=f"k{i % 7}", value=f"v{i}".encode())
    assert producer.flush(30) == 0
    done = kop_spark("validate-offsets", kop, topic, tmp_path, "--split-entries", "400")
    assert done.returncode == 0, done.stderr[-4000:]
    part = report(tmp_path, "validate-offsets")["partitions"]["0"]
    assert part["splits"] == 8
    assert part["kafka_records"] == part["pulsar_records"] == 3000
    # no transactions: the offsets are exactly 0..2999
    assert (part["first_offset"], part["last_offset"], part["markers"]) == (0, 2999, 0)


def test_validate_offsets_fails_on_forged_records_a_gap_and_a_wrong_checkpoint(
    kop: KopProcess, tmp_path: Path
) -> None:
    """Partition 0: a batch written straight to Pulsar whose records' offset deltas
    are swapped (Kafka clients place them differently than the log counts them).
    Partition 1: one whose deltas skip an offset (a gap in the Kafka view).
    Partition 2: a persisted checkpoint naming the message of offset 7 as offset 3."""
    topic = f"spark-forged-{uuid.uuid4().hex[:8]}"
    create_topic(kop.bootstrap, topic, 3, configs={"kop.pulsar.shared.writes": "true"})
    pulsar_topic = f"persistent://public/default/{topic}-partition-"
    producer = Producer({"bootstrap.servers": kop.bootstrap})

    def produce(partition: int, n: int) -> None:
        for i in range(n):  # a batch (a Pulsar entry) each
            producer.produce(topic, value=f"real-{partition}-{i}".encode(), partition=partition)
            assert producer.flush(30) == 0

    for p in range(3):
        produce(p, 10)
    now = int(time.time() * 1000)
    swapped = batch_with_deltas([b"forged-a", b"forged-b"], [1, 0], now)
    write_straight_to_pulsar(PULSAR_URL, pulsar_topic + "0", swapped)
    skipping = batch_with_deltas([b"forged-c", b"forged-d"], [0, 2], now)
    write_straight_to_pulsar(PULSAR_URL, pulsar_topic + "1", skipping)
    for p in range(2):
        produce(p, 5)
    wrong = Checkpoint(3, nth_position(PULSAR_URL, pulsar_topic + "2", 7))
    forge_checkpoint(PULSAR_URL, PULSAR_HTTP, kop.system_namespace, pulsar_topic + "2", wrong)

    done = kop_spark("validate-offsets", kop, topic, tmp_path)
    assert done.returncode == 1, done.stderr[-4000:]
    assert "the views DISAGREE" in done.stderr
    found = report(tmp_path, "validate-offsets")
    assert not found["ok"]
    first = {}
    for m in found["first_mismatches"]:
        first.setdefault(m["partition"], m)
    assert first[0]["offset"] == 10  # where the forged batch begins
    assert first[1]["offset"] == 11  # the offset its deltas skip
    assert first[1]["kind"] == "only in the Pulsar view"
    assert any("partition 1: 1 gaps" in f for f in found["failures"])
    assert first[2] == {
        "partition": 2, "kind": "checkpoint disagrees", "offset": 3,
        "position": "{}:{}".format(*wrong.position[:2]), "recomputed": 7,
    }  # fmt: skip


def test_replay_check_agrees_through_a_stream_restart_and_a_killed_kop(
    fresh_kop: KopProcess, tmp_path: Path
) -> None:
    topic = f"spark-replay-{uuid.uuid4().hex[:8]}"
    made = kop_spark(
        "generate", fresh_kop, topic, tmp_path / "gen", "--events", "30000",
        "--pulsar-events", "1000", "--partitions", "3", "--entities", "300",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-4000:]
    out = tmp_path / "replay"
    cmd = [
        KOP_SPARK, "replay-check", "--topic", topic, "--bootstrap", fresh_kop.bootstrap,
        "--pulsar-url", PULSAR_URL, "--admin-url", PULSAR_HTTP, "--report-dir", str(out),
        "--master", "local[2]", "--stream-batches", "6", "--stop-after", "3",
        "--system-namespace", fresh_kop.system_namespace,
    ]  # fmt: skip
    batches = out / "replay-check" / "batches.jsonl"
    job = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=small_env()
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(job.stdout or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while not (batches.exists() and batches.read_text().count("\n") >= 1):
        assert job.poll() is None, "".join(output)[-4000:]
        assert time.monotonic() < deadline, "the stream did no micro-batch in 300 s"
        time.sleep(0.1)
    assert job.poll() is None  # the stream is running: kill kop under it
    fresh_kop.kill9()
    fresh_kop.start()
    assert job.wait(JOB_TIMEOUT) == 0, _why(output)
    reader.join(10)
    found = report(out, "replay-check")
    assert found["ok"] and found["events"] == 31_000
    runs = found["materializations"]
    assert set(runs) >= {"streaming", "pulsar view"}
    assert sum(1 for name in runs if name.startswith("as of")) == 3
    for name, run in runs.items():
        assert run["differing_entities"] == 0, (name, run)
        assert run["entities"] > 0
    assert runs["streaming"]["micro_batches"]["before_restart"] >= 3
    assert runs["streaming"]["micro_batches"]["after_restart"] >= 1


def test_the_committed_only_views_agree_and_leave_out_every_aborted_transaction(
    generated: tuple[str, str, Path], kop: KopProcess, tmp_path: Path
) -> None:
    """The generated topic, whose last events were written in transactions, every
    third aborted: read_committed through kop and the Pulsar view filtered as
    docs/transactions.md says agree, both without the aborted events, and every
    other materialization of replay-check agrees over the whole topic."""
    _fmt, topic, _ = generated
    checked = kop_spark("replay-check", kop, topic, tmp_path, "--stop-after", "2")
    assert checked.returncode == 0, _why(checked.stderr.splitlines(keepends=True))
    found = report(tmp_path, "replay-check")
    assert found["ok"] and found["events"] == TOTAL
    runs = found["materializations"]
    for name, run in runs.items():
        assert run["differing_entities"] == 0, (name, run)
    only = runs["committed only"]
    kept = TOTAL - ABORTED
    assert (only["events"], only["dropped"], only["pulsar_view_events"]) == (kept, ABORTED, kept)


@pytest.mark.parametrize("generated", ["kafka"], indirect=True)
def test_the_same_module_runs_under_spark_submit(
    generated: tuple[str, str, Path], kop: KopProcess, tmp_path: Path
) -> None:
    """What a user with a cluster runs: spark-submit, its own flags, this file."""
    _fmt, topic, _ = generated
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    cmd = [
        str(submit), "--master", "local[2]", "--driver-java-options", SMALL_JVM,
        "--packages", KAFKA_PACKAGE,
        "--exclude-packages", EXCLUDES,
        "--conf", f"spark.jars.ivySettings={SPARK_DIR / 'ivysettings.xml'}",
        "--conf", f"spark.jars.ivy={ivy_cache()}",
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
        str(SPARK_DIR / "cli.py"), "validate-offsets", "--topic", topic,
        "--bootstrap", kop.bootstrap, "--pulsar-url", PULSAR_URL, "--admin-url", PULSAR_HTTP,
        "--report-dir", str(tmp_path), "--system-namespace", kop.system_namespace,
    ]  # fmt: skip
    env = {"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT, env={**small_env(), **env}
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert report(tmp_path, "validate-offsets")["ok"]


def test_an_unreachable_gateway_is_named_before_spark_starts(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    done = kop_spark("validate-offsets", f"localhost:{port}", "any", tmp_path)
    assert done.returncode == 1
    assert f"cannot reach kop (--bootstrap) at localhost:{port}" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "validate-offsets.json").exists()
