"""Transactions, as each client family that has them sees them: commit, abort and a
fenced zombie (what reads at each isolation level, where the partitions end, markers
included), offsets sent to a transaction, and Kafka's kafka-transactions tool."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from conformance.clients.java_tools import JavaTools
from conformance.clients.transactional import FLOWS, PARTITIONS
from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic


def _read(ctx: Ctx, topic: str, isolation: str, settle_s: float = 0) -> dict[str, Any]:
    """Each partition's values in offset order, up to the end the isolation level
    reports (the last stable offset for read_committed), and that end. `settle_s`: first
    wait up to that long for every transaction on the partition to have its marker
    (markers follow EndTxn's answer, on Kafka as on kop)."""
    consumer = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": ctx.name("reader"),
                         "isolation.level": isolation, "enable.auto.commit": False})  # fmt: skip
    out: dict[str, Any] = {}
    try:
        for p in range(PARTITIONS):
            if settle_s:
                _settled(ctx, consumer, TopicPartition(topic, p), settle_s)
            _, end = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            consumer.assign([TopicPartition(topic, p, 0)])
            values: list[str] = []
            if end == 0:  # nothing to read (the position stays unset)
                out[str(p)] = {"values": values, "end": end}
                continue
            deadline = time.monotonic() + 60
            while consumer.position([TopicPartition(topic, p)])[0].offset < end:
                if time.monotonic() > deadline:
                    values.append("(stuck)")
                    break
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    values.append(msg.value().decode())
            out[str(p)] = {"values": values, "end": end}
    finally:
        consumer.close()
    return out


@scenario("transactions/commit-abort-fence", tuple(FLOWS), quick=("confluent-kafka",))
def commit_abort_fence(ctx: Ctx, driver: Any) -> Observation:
    """A committed and an aborted transaction, then a second producer with the same
    transactional id fences the first while its transaction is open."""
    topic = ctx.name("txn")
    create_topic(ctx.bootstrap, topic, PARTITIONS)
    fenced = FLOWS[driver.name](ctx.bootstrap, topic, ctx.name("tid"))
    return {"zombie's commit": fenced,
            "read_committed": _read(ctx, topic, "read_committed"),
            "read_uncommitted": _read(ctx, topic, "read_uncommitted")}  # fmt: skip


def _settled(ctx: Ctx, committed: Consumer, tp: TopicPartition, within_s: float) -> None:
    """Until the last stable offset (what `committed`, a read_committed consumer, is told)
    reaches the high watermark, or `within_s` passed."""
    every = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": ctx.name("hw"),
                      "isolation.level": "read_uncommitted"})  # fmt: skip
    try:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            _, high = every.get_watermark_offsets(tp, timeout=30)
            _, stable = committed.get_watermark_offsets(tp, timeout=30)
            if stable >= high:
                return
            time.sleep(0.2)
    finally:
        every.close()


def _committed(ctx: Ctx, group: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": group,
                  "isolation.level": "read_uncommitted"})  # fmt: skip
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return [tp.offset for tp in c.committed(tps, 15)]
    finally:
        c.close()


@scenario("transactions/send-offsets", ("confluent-kafka",), quick=True)
def send_offsets(ctx: Ctx, driver: Any) -> Observation:
    """A read-process-write step's offsets: the group's only once the transaction
    commits, never an aborted one's."""
    topic, group = ctx.name("rpw"), ctx.name("rpw-group")
    create_topic(ctx.bootstrap, topic, PARTITIONS)
    p = Producer({"bootstrap.servers": ctx.bootstrap, "transactional.id": ctx.name("tid")})
    p.init_transactions(30)
    meta = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": group})
    out: dict[str, Any] = {}
    try:
        p.begin_transaction()
        p.produce(topic, b"out", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 7)],
                                      meta.consumer_group_metadata(), 30)  # fmt: skip
        out["before the commit"] = _committed(ctx, group, topic)
        p.commit_transaction(30)
        # the offsets become the group's with the marker, which Kafka (several brokers)
        # writes after the commit returns: the value they settle at
        deadline = time.monotonic() + 15
        while (after := _committed(ctx, group, topic)) == out["before the commit"]:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["after the commit"] = after
        p.begin_transaction()
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 9)],
                                      meta.consumer_group_metadata(), 30)  # fmt: skip
        p.abort_transaction(30)
        out["after an abort"] = _committed(ctx, group, topic)
    except KafkaException as exc:
        out["error"] = exc.args[0].name()
    finally:
        meta.close()
    return out


@scenario("transactions/group-transact-session", ("franz-go",), quick=True)
def group_transact_session(ctx: Ctx, driver: Any) -> Observation:
    """franz-go's GroupTransactSession copies a topic exactly once: every record once
    in the output (read_committed, in order per partition), the group's offsets at
    the input's end. (How many transactions, so markers, it takes depends on how the
    records arrive: the ends are not compared.)"""
    source, output, group = ctx.name("gts-in"), ctx.name("gts-out"), ctx.name("gts-group")
    create_topic(ctx.bootstrap, source, PARTITIONS)
    create_topic(ctx.bootstrap, output, PARTITIONS)
    p = Producer({"bootstrap.servers": ctx.bootstrap})
    for i in range(30):
        p.produce(source, f"v{i}".encode(), partition=i % PARTITIONS)
    assert p.flush(30) == 0
    session = driver.group_transact(ctx.bootstrap, source, output, group, ctx.name("tid"), 30)
    read = _read(ctx, output, "read_committed", settle_s=30)
    offsets = _committed(ctx, group, source)
    deadline = time.monotonic() + 15  # the offsets partition's marker may come a little later
    while min(offsets) < 0 and time.monotonic() < deadline:
        time.sleep(0.5)
        offsets = _committed(ctx, group, source)
    return {"session": session,
            "output": {p: part["values"] for p, part in read.items()},
            "group's offsets": offsets}  # fmt: skip


def _table(lines: list[str], keep: tuple[str, ...]) -> list[dict[str, str]]:
    """A kafka-transactions table (a header line, then rows), the `keep` columns."""
    rows = [line.split() for line in lines]
    if not rows:
        return []
    header = rows[0]
    return [{k: row[header.index(k)] for k in keep if k in header and len(row) == len(header)}
            for row in rows[1:]]  # fmt: skip


@scenario("tools/kafka-transactions", ("java-tools",), quick=True)
def kafka_transactions(ctx: Ctx, tools: JavaTools) -> Observation:
    """list, describe, describe-producers and find-hanging of an open transaction,
    then `abort` at its partition (a hanging transaction's remedy): read_committed
    gets past it."""
    topic, tid = ctx.name("hanging"), ctx.name("tid")
    create_topic(ctx.bootstrap, topic, PARTITIONS)
    p = Producer({"bootstrap.servers": ctx.bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    p.flush(30)
    bs = ("--bootstrap-server", ctx.bootstrap)
    listed = tools.run(ctx, "transactions", *bs, "list")
    described = tools.run(ctx, "transactions", *bs, "describe", "--transactional-id", tid)
    producers = tools.run(ctx, "transactions", *bs, "describe-producers", "--topic", topic,
                          "--partition", "0")  # fmt: skip
    hanging = tools.run(ctx, "transactions", *bs, "find-hanging", "--topic", topic)
    before = _read(ctx, topic, "read_committed")
    aborted = tools.run(ctx, "transactions", *bs, "abort", "--topic", topic, "--partition", "0",
                        "--start-offset", "0")  # fmt: skip
    plain = Producer({"bootstrap.servers": ctx.bootstrap})
    plain.produce(topic, b"plain", partition=0)
    plain.flush(30)
    after = _read(ctx, topic, "read_committed")
    p.abort_transaction(30)
    mine = [r for r in _table(listed.out, ("TransactionalId", "TransactionState"))
            if r.get("TransactionalId") == ctx.strip(tid)]  # fmt: skip
    return {
        "list": {"code": listed.code, "rows": mine},
        "describe": {"code": described.code, "rows": _table(described.out, (
            "ProducerEpoch", "TransactionState", "CurrentTransactionTimeoutMs",
            "TopicPartitions"))},
        "describe-producers": {"code": producers.code, "rows": _table(producers.out, (
            "ProducerEpoch", "LastSequence", "CurrentTransactionStartOffset"))},
        "find-hanging (open, not past the timeout)": {"code": hanging.code, "rows": _table(
            hanging.out, ("Topic", "Partition", "ProducerId"))},
        "read_committed before the abort": before,
        "abort": aborted.code,
        "read_committed after it": after,
    }  # fmt: skip
