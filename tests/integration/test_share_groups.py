"""KIP-932 share groups on Pulsar Shared subscriptions (D27), with kafka-clients 4.3.1's
share consumer, unmodified, against kop over Pulsar: members of one share group split
what is produced, each record to one member; a released record comes back with its
delivery counted; a Pulsar application on the group's subscription takes its share of
the same records and neither side receives what the other acknowledged; everything
acknowledged leaves the subscription's backlog empty."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pulsar
from confluent_kafka import Producer as CfProducer

from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_URL, KopProcess
from tests.integration.observe import pulsar_rest

JAVA_DIR = Path(__file__).resolve().parent / "java"


def _java(program: str, kafka_lib: Path, *args: str) -> list[str]:
    """One of tests/integration/java's programs with kafka-clients 4.3.1: its lines."""
    out = subprocess.run(
        ["java", "-cp", f"{kafka_lib}/*", str(JAVA_DIR / f"{program}.java"), *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out.stdout.splitlines()


def _run(kop: KopProcess, kafka_lib: Path, topic: str, group: str, *args: str) -> list[str]:
    return _java("ShareGroupConsume", kafka_lib, kop.bootstrap, topic, group, *args)


def _backlog(topic: str, subscription: str) -> int:
    stats = pulsar_rest("GET", f"persistent/public/default/{topic}/partitioned-stats")
    return int(stats["subscriptions"][subscription]["msgBacklog"])


def test_two_share_consumers_split_the_records_and_a_release_comes_back(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    create_topic(kop.bootstrap, topic, 4)
    group = f"sg-{topic}"
    lines = _run(kop, kafka_lib, topic, group, "1000", "2", "explicit")
    assert "RECEIVED 1000 DUPLICATES 0" in lines, lines[-8:]
    counts = [int(line.split()[2]) for line in lines if line.startswith("MEMBER ")]
    assert len(counts) == 2 and all(c > 0 for c in counts) and sum(counts) == 1000, counts
    assert [line for line in lines if line.startswith("DELIVERY")] == ["DELIVERY 1", "DELIVERY 2"]
    assert "REDELIVERED 2" in lines
    assert _backlog(topic, f"kafka-share-{group}") == 0  # every record acknowledged


def test_a_pulsar_consumer_shares_the_subscription_with_a_kafka_share_consumer(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """The Pulsar consumer attaches to the subscription kop names after the group; the
    Kafka member creates it on its first fetch (share.auto.offset.reset=latest)."""
    create_topic(kop.bootstrap, topic, 2)
    group = f"sg-{topic}"
    got: list[bytes] = []
    stop = threading.Event()
    native = pulsar.Client(PULSAR_URL)

    def pulsar_side() -> None:
        consumer = native.subscribe(
            f"persistent://public/default/{topic}", f"kafka-share-{group}",
            consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=5,
        )  # fmt: skip
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=500)
            except pulsar.Timeout:
                continue
            got.append(msg.data())
            consumer.acknowledge(msg)
        consumer.close()

    side = threading.Thread(target=pulsar_side)
    side.start()
    try:
        lines = _run(kop, kafka_lib, topic, group, "1000", "1")
    finally:
        stop.set()
        side.join(30)
        native.close()
    kafka = next(line for line in lines if line.startswith("VALUES ")).removeprefix("VALUES ")
    kafka_values = set(kafka.split(",")) if kafka else set()
    pulsar_values = {v.decode() for v in got}
    assert kafka_values and pulsar_values, (len(kafka_values), len(pulsar_values))
    assert not kafka_values & pulsar_values, "a record reached both sides"
    assert len(got) == len(pulsar_values), "the Pulsar consumer got a record twice"
    assert kafka_values | pulsar_values == {f"v{i}" for i in range(1000)}
    assert _backlog(topic, f"kafka-share-{group}") == 0


class _Ledger:
    """What each side of one share group received and had accepted, fed line by line
    from ShareGroupAccept.java's output and by the Pulsar consumer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: Counter[str] = Counter()  # by either side
        self.kafka_ok: Counter[str] = Counter()
        self.kafka_failed: set[str] = set()
        self.pulsar: Counter[str] = Counter()
        self.ok_events = 0

    def kafka_line(self, line: str) -> None:
        verdict, _, rest = line.partition(" ")
        value = rest.split(" ")[0]
        with self.lock:
            if verdict == "GOT":
                self.received[value] += 1
            elif verdict == "OK":
                self.kafka_ok[value] += 1
                self.ok_events += 1
            elif verdict == "FAIL":
                self.kafka_failed.add(value)

    def pulsar_acked(self, value: str) -> None:
        with self.lock:
            self.received[value] += 1
            self.pulsar[value] += 1

    def summary(self) -> str:
        with self.lock:
            return (
                f"received {len(self.received)} distinct, Kafka accepted {len(self.kafka_ok)}, "
                f"Kafka failed {len(self.kafka_failed)}, Pulsar acked {len(self.pulsar)}"
            )

    def settled(self, values: set[str]) -> bool:
        """Every value accepted by one side, or its Kafka acceptance failed."""
        with self.lock:
            return values <= set(self.kafka_ok) | set(self.pulsar) | self.kafka_failed


def _until(
    what: str, done: Callable[[], bool], within: float, why: Callable[[], str] = str
) -> None:
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within} s\n{why()}")
        time.sleep(0.2)


def test_no_record_is_lost_or_accepted_twice_when_kop_is_killed_mid_way(
    fresh_kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """Two Kafka share consumers (explicit acceptance, committed after each poll) and a
    Pulsar consumer on the group's subscription split 10,000 records; kop is killed -9
    once 3,000 acceptances were committed and started again. Every record reaches some
    consumer; what a Kafka member had accepted never comes again, to either side; a
    record seen twice is one whose Kafka acceptance failed when kop died (Pulsar gave
    back what the dead instance held: D27); the subscription ends with no backlog."""
    create_topic(fresh_kop.bootstrap, topic, 2)
    group = f"sg-kill-{topic}"
    values = {f"k{i}" for i in range(10_000)}
    ledger = _Ledger()
    native = pulsar.Client(PULSAR_URL)
    # The subscription exists before anything is produced: no record predates it.
    consumer = native.subscribe(
        f"persistent://public/default/{topic}", f"kafka-share-{group}",
        consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=1,
    )  # fmt: skip
    stop = threading.Event()

    def pulsar_side() -> None:  # a slow Pulsar application: a small share
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            ledger.pulsar_acked(msg.data().decode())
            time.sleep(0.02)

    java = subprocess.Popen(
        ["java", "-cp", f"{kafka_lib}/*", str(JAVA_DIR / "ShareGroupAccept.java"),
         fresh_kop.bootstrap, topic, group, "2", "50", "40"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    tail: list[str] = []

    def kafka_side() -> None:
        assert java.stdout is not None
        for line in java.stdout:
            ledger.kafka_line(line.strip())
            tail[:] = [*tail[-40:], line.rstrip()]

    threads = [threading.Thread(target=pulsar_side), threading.Thread(target=kafka_side)]
    for t in threads:
        t.start()
    try:
        # Small batches: Pulsar's Shared dispatcher hands out whole entries, so a Pulsar
        # consumer with a receiver queue of one still takes a batch at a time; with big
        # batches it took nearly every record before the Kafka members had polled (CI
        # saw 0 Kafka acceptances in 120 s).
        producer = CfProducer(
            {"bootstrap.servers": fresh_kop.bootstrap, "linger.ms": 5, "batch.num.messages": 20}
        )
        for v in sorted(values):
            producer.produce(topic, value=v.encode(), key=v.encode())
            producer.poll(0)
        assert producer.flush(30) == 0

        def why() -> str:  # what a failure needs to say: each side's count, the members' last lines
            kop_log = "\n".join(fresh_kop.log_path.read_text(errors="replace").splitlines()[-25:])
            return (
                f"{ledger.summary()}\nmembers said last:\n"
                + "\n".join(tail[-15:])
                + (f"\nkop's log ends:\n{kop_log}")
            )

        _until("3,000 Kafka acceptances", lambda: ledger.ok_events >= 3000, 120, why)
        fresh_kop.kill9()
        killed_at = ledger.ok_events
        fresh_kop.start()
        _until("every record accepted", lambda: ledger.settled(values), 180, why)
        _until("no backlog", lambda: _backlog(topic, f"kafka-share-{group}") == 0, 60)
    finally:
        assert java.stdin is not None
        with contextlib.suppress(OSError):
            java.stdin.write("stop\n")
            java.stdin.flush()
        try:
            java.wait(60)
        except subprocess.TimeoutExpired:
            java.kill()
        stop.set()
        for t in threads:
            t.join(30)
        consumer.close()
        native.close()
    assert ledger.ok_events > killed_at, "the Kafka members accepted nothing after the restart"
    assert ledger.pulsar, "the Pulsar consumer got no share"
    assert values <= set(ledger.received), "a record was lost"
    assert max(ledger.kafka_ok.values()) == 1, "a record was accepted twice on the Kafka side"
    assert not set(ledger.kafka_ok) & set(ledger.pulsar), "accepted by Kafka, then Pulsar got it"
    twice = {v for v, n in ledger.received.items() if n > 1}
    assert twice <= ledger.kafka_failed, sorted(twice - ledger.kafka_failed)[:10]
    in_doubt = values - set(ledger.kafka_ok) - set(ledger.pulsar)
    assert in_doubt <= ledger.kafka_failed, sorted(in_doubt)[:10]


def _share_groups(kop: KopProcess, *args: str) -> list[list[str]]:
    """kafka-share-groups (Kafka 4.3.1's own tool), its output's non-empty lines."""
    return [line.split() for line in _kafka_tool(kop, "share-groups", *args) if line.strip()]


def test_kafka_share_groups_reads_moves_and_deletes_the_pulsar_subscription(
    kop: KopProcess, topic: str
) -> None:
    """The start offset and lag `kafka-share-groups --describe` shows are the group's
    Pulsar subscription's cursor counted into Kafka offsets (D30): a reset creates the
    subscription at the partition's start, a Pulsar consumer that acknowledges records
    0-2 and 5-9 moves the start to 3 and leaves a lag of 12 (Pulsar's own backlog), a
    reset to the latest leaves none, and a delete removes the subscription."""
    create_topic(kop.bootstrap, topic, 1)
    producer = CfProducer({"bootstrap.servers": kop.bootstrap, "linger.ms": 0})
    for i in range(20):  # one record per entry
        producer.produce(topic, f"r{i}".encode())
        producer.flush(30)
    group = f"sgo-{topic}"
    subscription = f"kafka-share-{group}"
    g = ["--group", group]
    to = ["--execute", "--topic", topic, *g]
    reset = _share_groups(kop, "--reset-offsets", "--to-earliest", *to)
    assert reset[1:] == [[group, topic, "0", "0"]], reset
    assert _share_groups(kop, "--describe", *g)[1:] == [[group, topic, "0", "0", "20"]]
    assert _backlog(topic, subscription) == 20

    native = pulsar.Client(PULSAR_URL)
    try:
        consumer = native.subscribe(
            f"persistent://public/default/{topic}", subscription,
            consumer_type=pulsar.ConsumerType.Shared,
        )  # fmt: skip
        got = [consumer.receive(timeout_millis=10_000) for _ in range(20)]
        assert sorted(m.data().decode() for m in got) == sorted(f"r{i}" for i in range(20))
        wanted = {f"r{i}" for i in (0, 1, 2, 5, 6, 7, 8, 9)}
        for msg in got:
            if msg.data().decode() in wanted:
                consumer.acknowledge(msg)
        consumer.close()  # what it did not acknowledge goes back
    finally:
        native.close()
    described = lambda: _share_groups(kop, "--describe", *g)[1:]  # noqa: E731
    _until("the acknowledgements reach the cursor",
           lambda: described() == [[group, topic, "0", "3", "12"]], 30,
           lambda: str(described()))  # fmt: skip
    assert _backlog(topic, subscription) == 12

    _share_groups(kop, "--reset-offsets", "--to-latest", *to)
    assert _share_groups(kop, "--describe", *g)[1:] == [[group, topic, "0", "20", "0"]]
    assert _backlog(topic, subscription) == 0

    deleted = _share_groups(kop, "--delete-offsets", "--topic", topic, *g)
    assert deleted[1:] == [[topic, "Successful"]], deleted
    subs = pulsar_rest("GET", f"persistent/public/default/{topic}-partition-0/subscriptions")
    assert subscription not in (subs or []), subs
    assert _share_groups(kop, "--describe", *g) == [
        ["Share", "group", f"'{group}'", "has", "no", "offset", "information."]
    ]


def _kafka_tool(kop: KopProcess, tool: str, *args: str) -> list[str]:
    """One of Kafka 4.3.1's own tools against kop: its output's lines."""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(root / "tools" / "kafka.py"), "tool", tool,
         "--bootstrap-server", kop.bootstrap, *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out.stdout.splitlines()


def test_kafka_configs_starts_a_share_group_at_the_earliest_record(
    kop: KopProcess, topic: str
) -> None:
    """`kafka-configs --alter --entity-type groups --add-config share.auto.offset.reset=
    earliest`, as Kafka's share-group quick start does, before the group exists: the
    console share consumer then reads the records written before it started (with the
    default, latest, it would wait for new ones), `--describe` shows the override, and
    the override is a property of the group's namespace in Pulsar."""
    create_topic(kop.bootstrap, topic, 1)
    producer = CfProducer({"bootstrap.servers": kop.bootstrap, "linger.ms": 0})
    for i in range(5):
        producer.produce(topic, f"early-{i}".encode())
    producer.flush(30)
    group = f"sge-{topic}"
    entity = ["--entity-type", "groups", "--entity-name", group]
    _kafka_tool(
        kop, "configs", "--alter", *entity, "--add-config", "share.auto.offset.reset=earliest"
    )
    described = _kafka_tool(kop, "configs", "--describe", *entity)
    assert any("share.auto.offset.reset=earliest" in line for line in described), described
    stored = pulsar_rest("GET", "namespaces/public/default/properties")
    assert stored[f"kop-group-config:{group}"] == '{"share.auto.offset.reset": "earliest"}'

    read = _kafka_tool(
        kop, "console-share-consumer", "--topic", topic, "--group", group,
        "--max-messages", "5", "--timeout-ms", "60000",
    )  # fmt: skip
    assert sorted(line for line in read if line.startswith("early-")) == [
        f"early-{i}" for i in range(5)
    ], read


def test_a_renewed_lock_outlasts_its_duration_and_record_limit_splits_a_batch(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """ShareFetch and ShareAcknowledge v2 with kafka-clients 4.3.1
    (tests/integration/java/ShareGroupRenew.java): in the record-limit acquire mode the
    first poll takes two records of a batch of six; a member renews v0's 15 s lock for
    17 s while another member fetches, so v0 is delivered once, to its holder, and every
    record is accepted once; a group with share.renew.acknowledge.enable=false refuses
    the renewal. The conformance cell share/renew-and-record-limit has Kafka 4.3.1 print
    the same lines."""
    create_topic(kop.bootstrap, topic, 1)
    lines = _java("ShareGroupRenew", kafka_lib, kop.bootstrap, topic, f"sgr-{topic}", "17000")
    assert lines[:3] == ["FIRST v0,v1", "LOCK 15000", "RENEW-COMMIT ok"], lines
    assert "V0 deliveries 1 accepted-by A" in lines, lines
    assert any(line.startswith("ALL accepted once: true") for line in lines), lines
    assert lines[-1].startswith("DISABLED InvalidRecordStateException"), lines


def test_a_group_reset_by_duration_starts_at_the_last_hours_records(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """share.auto.offset.reset=by_duration:PT1H with kafka-clients 4.3.1
    (tests/integration/java/ShareGroupByDuration.java): the group's Pulsar subscription is
    made at the first record of the last hour, so its member reads the three records
    stamped now and none of the three stamped two hours ago; a negative duration is
    refused. The conformance cell share/reset-by-duration has Kafka 4.3.1 print the same."""
    create_topic(kop.bootstrap, topic, 1)
    lines = _java("ShareGroupByDuration", kafka_lib, kop.bootstrap, topic, f"sgd-{topic}")
    assert lines == ["REFUSED InvalidConfigurationException", "READ new0,new1,new2"], lines


def test_rejected_and_exhausted_records_reach_the_groups_dead_letter_topic(
    kop: KopProcess, topic: str, kafka_lib: Path
) -> None:
    """KIP-1191's dead-letter topic (after Kafka 4.3) with kafka-clients 4.3.1
    (tests/integration/java/ShareGroupDeadLetters.java) over real Pulsar: the member
    rejects v1 and releases v2 at both its allowed deliveries; each gets one letter with
    its key and value and Kafka's headers, read back by a plain consumer; the records
    accepted get none. The letters are a Pulsar topic's messages like any other."""
    create_topic(kop.bootstrap, topic, 1)
    dlq = f"dlq.{topic}"
    group = f"sgd-{topic}"
    lines = _java("ShareGroupDeadLetters", kafka_lib, kop.bootstrap, topic, group, dlq)
    assert lines[0] == "ACCEPTED v0,v3 V2-DELIVERIES 2", lines
    assert lines[1:] == [
        f"LETTER v1 key=k1 topic={topic} offset=1 group={group} count=1 Offset rejected by client.",
        f"LETTER v2 key=k2 topic={topic} offset=2 group={group} count=2 "
        "Offset delivery count exceeded the threshold.",
    ], lines
    stats = pulsar_rest("GET", f"persistent/public/default/{dlq}/partitioned-stats")
    assert stats["msgInCounter"] == 2, stats
