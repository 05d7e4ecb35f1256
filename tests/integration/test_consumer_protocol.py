"""The KIP-848 consumer protocol with the Java consumer of kafka-clients 4.3.1
(`group.protocol=consumer`), unmodified, against kop over Pulsar: a member joins, a
second takes its share (the first revokes only what moves), both consume and commit,
one leaves and the other has everything again, the admin describes a consumer group,
and a new member resumes from the commits; a broker-side regex subscription picks up a
topic created after the group subscribed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess

JAVA_DIR = Path(__file__).resolve().parent / "java"


def test_java_consumer_protocol_group(kop: KopProcess, topic: str, kafka_lib: Path) -> None:
    """A (the regex member) and B (by name) in one group: both ways of subscribing at once.
    By names alone the conformance scenario tools/consumer-protocol judges it against Kafka."""
    create_topic(kop.bootstrap, topic, 4)
    out = subprocess.run(
        ["java", "-cp", f"{kafka_lib}/*", str(JAVA_DIR / "ConsumerProtocolGroup.java"),
         kop.bootstrap, topic, f"g-{topic}", "4", "regex"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    lines = out.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("TIMEOUT", "LOST"))], out.stdout
    assert "ALONE A [0, 1, 2, 3]" in lines, out.stdout
    sets = {" ".join(line.split(" ", 2)[:2]): _ints(line.split(" ", 2)[2])
            for line in lines if line.startswith(("FINAL ", "REVOKED "))}  # fmt: skip
    a, b = sets["FINAL A"], sets["FINAL B"]
    assert a and b and a | b == {0, 1, 2, 3} and not a & b, out.stdout
    assert sets["REVOKED A"] == b, "A gave up partitions it kept, or kept ones it gave away"
    assert "CONSUMED 40" in lines
    assert "AFTER A [0, 1, 2, 3]" in lines
    assert "DESCRIBE Consumer Stable 1" in lines
    assert "RESUMED 5" in lines  # from the commits: nothing read twice, nothing skipped
    assert "LATER [0, 1]" in lines


def _ints(text: str) -> set[int]:
    return {int(x) for x in text.strip("[]").split(",") if x.strip()}


def test_java_classic_group_upgraded_and_downgraded_online(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """Kafka's online migration: A (classic) holds every partition, B joins with
    group.protocol=consumer and the group becomes a KIP-848 group with A still in it;
    they split the partitions and read everything once; B leaves, the group is a classic
    one again and A reads on. The conformance cell tools/protocol-migration judges the
    same steps against Kafka 4.3.1."""
    create_topic(kop.bootstrap, topic, 4)
    out = subprocess.run(
        ["java", "-cp", f"{kafka_lib}/*", str(JAVA_DIR / "ProtocolMigration.java"),
         kop.bootstrap, topic, f"g-{topic}", "4"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    lines = out.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("TIMEOUT", "LOST"))], out.stdout
    assert lines == [
        "ALONE A [0, 1, 2, 3]",
        "SPLIT 2 2 shared []",
        "DESCRIBE Consumer Stable 2 [migration-A=false, migration-B=true]",
        "CONSUMED 40",
        "AFTER A [0, 1, 2, 3]",
        "DESCRIBE Classic Stable 1 [migration-A=?]",
        "MORE 8",
        "END",
    ], out.stdout
