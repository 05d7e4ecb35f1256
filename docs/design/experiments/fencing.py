"""What Pulsar 4.0.7 does with ExclusiveWithFencing producers (docs/design/several-instances.md).

Run against a private standalone: python fencing.py pulsar://localhost:6683 http://localhost:8193
Each experiment prints one line per fact it observes; nothing here is part of kop.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
import uuid

import pulsar
from pulsar import ProducerAccessMode as Mode

SERVICE, HTTP = sys.argv[1], sys.argv[2]
NS = "public/default"


def admin(method: str, path: str, body: object | None = None) -> object:
    """One admin REST call; JSON answer or None."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(HTTP + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def topic_name(tag: str) -> str:
    """A new non-partitioned topic (the standalone auto-creates partitioned ones)."""
    short = f"fence-{tag}-{uuid.uuid4().hex[:6]}"
    admin("PUT", f"/admin/v2/persistent/{NS}/{short}")
    return f"persistent://{NS}/{short}"


def epoch_property(topic: str) -> str | None:
    """The managed ledger's properties are what the topic properties endpoint shows."""
    props = admin("GET", f"/admin/v2/persistent/{NS}/{topic.rsplit('/', 1)[1]}/properties")
    assert isinstance(props, dict)
    return props.get("pulsar.topic.epoch")


def try_send(producer: pulsar.Producer, payload: bytes) -> str:
    try:
        return f"ok {producer.send(payload)}"
    except Exception as exc:  # noqa: BLE001 - the exception type is the fact
        return f"{type(exc).__name__}: {exc}"


def e1_fence_at_once(client: pulsar.Client) -> None:
    """Does a second ExclusiveWithFencing producer fence the first at once; what does a send get."""
    topic = topic_name("e1")
    p1 = client.create_producer(topic, producer_name="owner-a", access_mode=Mode.ExclusiveWithFencing)
    print("E1 p1 first send:", try_send(p1, b"a1"), "epoch property:", epoch_property(topic))
    t0 = time.monotonic()
    p2 = client.create_producer(topic, producer_name="owner-b", access_mode=Mode.ExclusiveWithFencing)
    print(f"E1 p2 created in {1000 * (time.monotonic() - t0):.1f} ms, epoch property:", epoch_property(topic))
    t0 = time.monotonic()
    print("E1 p1 send after fence:", try_send(p1, b"a2"), f"({1000 * (time.monotonic() - t0):.1f} ms)")
    print("E1 p1 send again:", try_send(p1, b"a3"))
    print("E1 p2 send:", try_send(p2, b"b1"))
    shared = None
    try:
        shared = client.create_producer(topic, producer_name="native", access_mode=Mode.Shared,
                                        send_timeout_millis=3000)
        print("E1 Shared producer while exclusive held: created", try_send(shared, b"n1"))
    except Exception as exc:  # noqa: BLE001
        print("E1 Shared producer while exclusive held:", f"{type(exc).__name__}: {exc}")
    try:
        client.create_producer(topic, producer_name="owner-c", access_mode=Mode.Exclusive)
    except Exception as exc:  # noqa: BLE001
        print("E1 Exclusive (no fencing) while exclusive held:", f"{type(exc).__name__}: {exc}")
    p2.close()
    print("E1 after p2.close, epoch property:", epoch_property(topic))
    try:
        shared = client.create_producer(topic, producer_name="native2", access_mode=Mode.Shared)
        print("E1 Shared after exclusive closed:", try_send(shared, b"n2"))
    except Exception as exc:  # noqa: BLE001
        print("E1 Shared after exclusive closed:", f"{type(exc).__name__}: {exc}")


def e2_pending_sends(client: pulsar.Client) -> None:
    """What happens to the fenced producer's pending sends, and are they all before the new owner's."""
    topic = topic_name("e2")
    p1 = client.create_producer(topic, producer_name="owner-a", access_mode=Mode.ExclusiveWithFencing,
                                batching_enabled=False, max_pending_messages=100000,
                                block_if_queue_full=True)
    results: dict[int, object] = {}
    lock = threading.Lock()

    def callback_for(i: int):  # type: ignore[no-untyped-def]
        def done(res, msg_id):  # type: ignore[no-untyped-def]
            with lock:
                results[i] = (str(res), msg_id)
        return done

    n = 20000
    stop_at = None
    for i in range(n):
        p1.send_async(f"a{i}".encode(), callback_for(i))
        if i == 5000:
            t0 = time.monotonic()
            p2 = client.create_producer(topic, producer_name="owner-b",
                                        access_mode=Mode.ExclusiveWithFencing, batching_enabled=False)
            created_ms = 1000 * (time.monotonic() - t0)
            first_b = p2.send(b"b0")
            stop_at = i
    deadline = time.monotonic() + 60
    while len(results) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    ok = [(i, mid) for i, (res, mid) in results.items() if res == "Result.Ok"]
    failed = {res for i, (res, mid) in results.items() if res != "Result.Ok"}
    last_ok = max(i for i, _ in ok)
    print(f"E2 p2 created after p1 queued {stop_at + 1} sends, in {created_ms:.1f} ms; p2's first id {first_b}")
    print(f"E2 p1 sends: {len(ok)} ok (highest index {last_ok}), {n - len(ok)} failed with {failed}; "
          f"callbacks {len(results)}/{n}")
    after = [i for i, mid in ok if (mid.ledger_id(), mid.entry_id()) > (first_b.ledger_id(), first_b.entry_id())]
    print(f"E2 p1 sends acknowledged but stored after p2's first message: {len(after)}")
    oks = sorted(i for i, _ in ok)
    print("E2 p1's acknowledged sends are a prefix 0..k:", oks == list(range(len(oks))))
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    seen = []
    while reader.has_message_available():
        seen.append(reader.read_next(5000).data())
    a_seen = [int(x[1:]) for x in seen if x.startswith(b"a")]
    print(f"E2 log holds {len(a_seen)} of p1's messages (== acked: {sorted(a_seen) == oks}), "
          f"p2's b0 at position {seen.index(b'b0')} of {len(seen)}; any of p1's after b0: "
          f"{any(x.startswith(b'a') for x in seen[seen.index(b'b0') + 1:])}")


def e3_shared_then_fencing(client: pulsar.Client) -> None:
    """A Pulsar-native Shared producer, then a kop-like ExclusiveWithFencing one arrives."""
    topic = topic_name("e3")
    native = client.create_producer(topic, producer_name="native", access_mode=Mode.Shared,
                                    send_timeout_millis=5000)
    print("E3 native send:", try_send(native, b"n1"))
    owner = client.create_producer(topic, producer_name="owner", access_mode=Mode.ExclusiveWithFencing)
    t0 = time.monotonic()
    print("E3 native send after fencing producer attached:", try_send(native, b"n2"),
          f"({1000 * (time.monotonic() - t0):.0f} ms)")
    owner.close()
    t0 = time.monotonic()
    print("E3 native send after the exclusive one closed:", try_send(native, b"n3"),
          f"({1000 * (time.monotonic() - t0):.0f} ms)")


def e4_dedup(client: pulsar.Client) -> None:
    """With deduplication on: does a new owner under the same producer name continue the sequence."""
    topic = topic_name("e4")
    short = topic.rsplit("/", 1)[1]
    admin("POST", f"/admin/v2/persistent/{NS}/{short}/deduplicationEnabled", True)
    time.sleep(2)  # topic policies are applied asynchronously (system topic); nothing to poll cheaply
    p1 = client.create_producer(topic, producer_name="kop-p0", access_mode=Mode.ExclusiveWithFencing,
                                batching_enabled=False)
    for i in range(5):
        p1.send(f"a{i}".encode(), sequence_id=10 + i)
    print("E4 p1 last_sequence_id:", p1.last_sequence_id())
    p2 = client.create_producer(topic, producer_name="kop-p0", access_mode=Mode.ExclusiveWithFencing,
                                batching_enabled=False)
    print("E4 p2 (same name) last_sequence_id on attach:", p2.last_sequence_id())
    print("E4 p2 resend of seq 14 (already stored):", try_send_seq(p2, b"dup", 14))
    print("E4 p2 seq 15:", try_send_seq(p2, b"a5", 15))
    print("E4 p1 (fenced) seq 16:", try_send_seq(p1, b"zombie", 16))
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    seen = []
    while reader.has_message_available():
        seen.append(reader.read_next(5000).data())
    print("E4 log:", seen)


def try_send_seq(producer: pulsar.Producer, payload: bytes, seq: int) -> str:
    try:
        return f"ok {producer.send(payload, sequence_id=seq)}"
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


def e5_epoch_persisted(client: pulsar.Client, topic: str | None) -> str:
    """The topic epoch across an unload (and, run twice around a restart, across a broker restart)."""
    if topic is None:
        topic = topic_name("e5")
        p = client.create_producer(topic, producer_name="x", access_mode=Mode.ExclusiveWithFencing)
        p.close()
        p = client.create_producer(topic, producer_name="y", access_mode=Mode.ExclusiveWithFencing)
        print("E5 epoch after two fencing producers:", epoch_property(topic))
        short = topic.rsplit("/", 1)[1]
        admin("PUT", f"/admin/v2/persistent/{NS}/{short}/unload")
        print("E5 after unload, epoch:", epoch_property(topic), "held producer y sends:", try_send(p, b"y1"))
        p.close()
        print("E5 topic for the restart check:", topic)
        return topic
    print("E5 after broker restart, epoch:", epoch_property(topic))
    p = client.create_producer(topic, producer_name="z", access_mode=Mode.ExclusiveWithFencing)
    print("E5 a new fencing producer after restart, epoch:", epoch_property(topic))
    p.close()
    return topic


if __name__ == "__main__":
    c = pulsar.Client(SERVICE, operation_timeout_seconds=10,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    which = sys.argv[3] if len(sys.argv) > 3 else "all"
    if which == "restart":
        e5_epoch_persisted(c, sys.argv[4])
    else:
        for fn in (e1_fence_at_once, e2_pending_sends, e3_shared_then_fencing, e4_dedup):
            fn(c)
        e5_epoch_persisted(c, None)
    c.close()
