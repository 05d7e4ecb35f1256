"""The Java consumer (kafka-clients 4.3.1, from the reference Kafka's distribution,
with its log4j2) validates its positions against kop as against Kafka (KIP-320):
records carry leader epoch 0, the commit carries it, a member resuming from the
commit and a seek with an epoch are validated with OffsetForLeaderEpoch (the
client logs the end offset it got), across metadata refreshes, with no warning or
error logged and no offset reset (auto.offset.reset=none); and across a restart
of kop, which leads the partition in a newer epoch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.integration.admin import create_topic
from tests.integration.clients import cf_produce, sample_records
from tests.integration.conftest import KopProcess

ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = Path(__file__).resolve().parent / "java"
CACHE = Path(os.environ.get("KOP_CACHE_DIR", "~/.cache/kop")).expanduser()


def test_java_consumer_validates_its_positions_against_kop(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    create_topic(kop.bootstrap, topic, 1)
    out = subprocess.run(
        ["java", f"-Dlog4j2.configurationFile={JAVA_DIR / 'epoch-log4j2.xml'}",
         "-cp", f"{kafka_lib}/*", str(JAVA_DIR / "EpochValidation.java"),
         kop.bootstrap, topic, f"g-{topic}"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    lines = out.stdout.splitlines()
    logged = [line for line in lines if line.startswith("LOG ")]
    problems = [line for line in logged if line.startswith(("LOG WARN", "LOG ERROR"))]
    assert problems == [], problems
    assert "A [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] EPOCHS [0]" in lines
    assert "COMMITTED 10 EPOCH 0" in lines
    assert "B [10, 11, 12, 13, 14]" in lines
    assert "SEEK [12, 13, 14]" in lines
    assert "POSITION 15" in lines
    validated = [line for line in logged if "Got offset 15 for epoch 0" in line]
    assert len(validated) == 2, logged  # resuming from the commit, and the seek


def test_a_consumer_validates_its_position_after_kop_restarted_in_a_newer_epoch(
    fresh_kop: KopProcess, topic: str, kafka_lib: Path, tmp_path: Path
) -> None:
    create_topic(fresh_kop.bootstrap, topic, 1)
    classes = tmp_path / "classes"
    javac = subprocess.run(
        ["javac", "-cp", f"{kafka_lib}/*", "-d", str(classes),
         str(JAVA_DIR / "EpochValidation.java"), str(JAVA_DIR / "EpochAcrossRestart.java")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert javac.returncode == 0, javac.stderr[-3000:]
    consumer = subprocess.Popen(
        ["java", f"-Dlog4j2.configurationFile={JAVA_DIR / 'epoch-log4j2.xml'}",
         "-cp", f"{kafka_lib}/*:{classes}", "EpochAcrossRestart", fresh_kop.bootstrap, topic],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert consumer.stdin is not None and consumer.stdout is not None
    before: list[str] = []
    try:
        for line in consumer.stdout:  # ends when the program does (it times out itself)
            before.append(line.rstrip("\n"))
            if line.startswith("RESTART"):
                break
        assert "A [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] EPOCHS [0]" in before, before
        assert fresh_kop.stop() == 0
        fresh_kop.start()
        offsets = cf_produce(fresh_kop.bootstrap, topic, sample_records(5), None)
        assert offsets == [10, 11, 12, 13, 14]
        out, _ = consumer.communicate("go\n", timeout=180)
    finally:
        if consumer.poll() is None:
            consumer.kill()
    after = out.splitlines()
    assert consumer.returncode == 0, "\n".join(before + after)[-3000:]
    assert "B [10, 11, 12, 13, 14]" in after, after
    assert "POSITION 15" in after, after
    logged = [line for line in after if line.startswith("LOG ")]
    # Fenced by the newer epoch, the consumer validated its position (10, epoch 0):
    # epoch 0 ends at the log end, so nothing was truncated and nothing reset.
    assert any("for epoch 0" in line and "Got offset" in line for line in logged), logged
    assert not [line for line in logged if "truncat" in line.lower() or "reset" in line.lower()]
