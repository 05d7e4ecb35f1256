"""The Java Kafka client (kafka-clients 3.9, idempotence on by default), unmodified:
admin create, idempotent produce with each codec, consume, offsetsForTimes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess
from tests.integration.maven import cached_classpath

JAVA_DIR = Path(__file__).resolve().parent / "java"


@pytest.fixture(scope="session")
def java_classpath() -> str:
    return cached_classpath(JAVA_DIR / "pom.xml", "kafka-clients-3.9.1")


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_java_client_roundtrip(
    kop: KopProcess, topic: str, java_classpath: str, codec: str
) -> None:
    fmt = "kafka" if codec in ("lz4", "zstd") else "pulsar"
    n = 40
    out = subprocess.run(
        [
            "java",
            "-cp",
            java_classpath,
            str(JAVA_DIR / "KafkaRoundTrip.java"),
            kop.bootstrap,
            topic,
            codec,
            fmt,
            str(n),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert f"PRODUCED {list(range(n))}".replace("'", "") in lines
    records = [line.split(" ", 1)[1].split("|") for line in lines if line.startswith("RECORD ")]
    assert [int(r[0]) for r in records] == list(range(n))
    for i, (_off, key, value, ts, headers) in enumerate(records):
        assert key == ("null" if i % 4 == 3 else f"key-{i}".encode().hex())
        assert value == ("null" if i % 5 == 4 else f"value-{i}".encode().hex())
        assert int(ts) == 1_700_000_000_000 + i * 10
        assert headers == f"h={bytes([i, 0xFF]).hex()};"
    assert "TIME 21" in lines
    assert f"END {n}" in lines


def test_java_cooperative_sticky_rebalance_revokes_only_what_moves(
    kop: KopProcess, topic: str, java_classpath: str
) -> None:
    """A second member joins: the first gives up only the partitions that move to
    it (an incremental, cooperative rebalance), keeps the rest, and both end with
    disjoint halves covering the topic."""
    create_topic(kop.bootstrap, topic, 4)
    out = subprocess.run(
        ["java", "-cp", java_classpath, str(JAVA_DIR / "CooperativeGroup.java"),
         kop.bootstrap, topic, f"g-{topic}", "4"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = {line.split(" ", 2)[0] + " " + line.split(" ", 2)[1]: line.split(" ", 2)[2]
             for line in out.stdout.splitlines() if line.count(" ") >= 2}  # fmt: skip

    def parts(key: str) -> set[int]:
        inner = lines[key].strip("[]")
        return {int(x) for x in inner.split(",")} if inner.strip() else set()

    assert parts("ALONE A") == {0, 1, 2, 3}
    a, b, revoked = parts("FINAL A"), parts("FINAL B"), parts("REVOKED A")
    assert a and b and a | b == {0, 1, 2, 3} and not a & b
    assert revoked == b, "A gave up partitions it kept, or kept ones it gave away"
    assert "LOST" not in out.stdout


def test_java_static_leader_restart_moves_nothing(
    kop: KopProcess, topic: str, java_classpath: str
) -> None:
    """KIP-345 and KIP-814: the group's static leader restarts with a new member id.
    Its subscription now names the partitions it owned, so it differs from the first
    one; the group still does not rebalance (the selected protocol is the same), the
    leader is told not to run the assignor, and both keep their partitions."""
    create_topic(kop.bootstrap, topic, 4)
    out = subprocess.run(
        ["java", "-cp", java_classpath, str(JAVA_DIR / "StaticRestart.java"),
         kop.bootstrap, topic, f"g-{topic}", "4"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = {" ".join(line.split(" ", 2)[:2]): line.split(" ", 2)[2]
             for line in out.stdout.splitlines() if line.count(" ") >= 2}  # fmt: skip
    assert "END" in out.stdout, out.stdout
    assert lines["REVOKED B"] == "[]", out.stdout
    assert lines["FINAL A"] == lines["BEFORE A"] != "[]", out.stdout
    assert lines["FINAL B"] == lines["BEFORE B"] != "[]", out.stdout
