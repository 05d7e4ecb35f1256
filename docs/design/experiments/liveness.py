"""How fast Pulsar alone tells a standby that an instance died or froze (docs/design/several-instances.md).

A Failover subscription on a membership topic: the active consumer is the live owner, the
standby learns it is active when messages start reaching it. The first process also holds an
ExclusiveWithFencing producer on a data topic and writes to it; the standby, once active,
fences it and writes; the frozen one, woken, reports what its next send got.

python liveness.py pulsar://localhost:6683 http://localhost:8193 {kill,stop} [cycles]
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import pulsar
from pulsar import ProducerAccessMode as Mode

NS = "public/default"
LOG = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


def create(http: str, short: str) -> str:
    req = urllib.request.Request(f"{http}/admin/v2/persistent/{NS}/{short}", method="PUT")
    urllib.request.urlopen(req, timeout=30).close()
    return f"persistent://{NS}/{short}"


def member(service: str, members: str, data: str, name: str) -> None:
    """One instance: a Failover consumer; once active, owns `data` with a fencing producer."""
    client = pulsar.Client(service, logger=LOG)
    consumer = client.subscribe(members, "kop-members", consumer_name=name,
                                consumer_type=pulsar.ConsumerType.Failover, receiver_queue_size=1)
    msg = consumer.receive()
    consumer.acknowledge(msg)
    print(json.dumps({"event": "active", "name": name, "at": time.time()}), flush=True)
    owner = client.create_producer(data, producer_name=f"owner-{name}", batching_enabled=False,
                                   access_mode=Mode.ExclusiveWithFencing, send_timeout_millis=5000)
    print(json.dumps({"event": "owns", "name": name, "at": time.time()}), flush=True)

    def drain() -> None:
        while True:
            consumer.acknowledge(consumer.receive())

    threading.Thread(target=drain, daemon=True).start()
    i = 0
    while True:
        try:
            owner.send(f"{name}-{i}".encode())
        except Exception as exc:  # noqa: BLE001 - the error is the fact
            print(json.dumps({"event": "send-failed", "name": name, "i": i, "error": str(exc),
                              "at": time.time()}), flush=True)
            os._exit(0)
        i += 1
        time.sleep(0.02)


def cycle(service: str, http: str, mode: str) -> dict[str, object]:
    tag = uuid.uuid4().hex[:6]
    members = create(http, f"members-{tag}")
    data = create(http, f"data-{tag}")
    client = pulsar.Client(service, logger=LOG)
    ticker = client.create_producer(members, batching_enabled=False)
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticker.send_async(b"t", None)
            time.sleep(0.02)

    procs = []
    lines: dict[str, list[dict[str, object]]] = {"a": [], "b": []}

    def spawn(name: str) -> subprocess.Popen[str]:
        p = subprocess.Popen([sys.executable, __file__, "member", service, members, data, name],
                             stdout=subprocess.PIPE, text=True)

        def read() -> None:
            assert p.stdout is not None
            for line in p.stdout:
                if line.startswith("{"):
                    lines[name].append(json.loads(line))
        threading.Thread(target=read, daemon=True).start()
        procs.append(p)
        return p

    def wait_for(name: str, event: str, timeout: float) -> dict[str, object] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in lines[name]:
                if e["event"] == event:
                    return e
            time.sleep(0.005)
        return None

    a = spawn("a")
    threading.Thread(target=tick, daemon=True).start()
    assert wait_for("a", "owns", 30)
    spawn("b")
    time.sleep(2)  # b is subscribed and standing by; it must not become active
    early = [e for e in lines["b"] if e["event"] == "active"]
    t_fault = time.time()
    os.kill(a.pid, signal.SIGKILL if mode == "kill" else signal.SIGSTOP)
    b_active = wait_for("b", "active", 120)
    result: dict[str, object] = {"mode": mode, "standby_active_before_fault": bool(early)}
    if b_active is None:
        result["detect_s"] = None
    else:
        result["detect_s"] = round(float(b_active["at"]) - t_fault, 3)  # type: ignore[arg-type]
        b_owns = wait_for("b", "owns", 30)
        result["fence_ms"] = round(1000 * (float(b_owns["at"]) - float(b_active["at"])), 1)  # type: ignore[arg-type,index]
    if mode == "stop":
        time.sleep(1)
        os.kill(a.pid, signal.SIGCONT)
        failed = wait_for("a", "send-failed", 30)
        result["woken_send"] = failed and failed["error"]
        reader = client.create_reader(data, pulsar.MessageId.earliest)
        seen = []
        while reader.has_message_available():
            seen.append(reader.read_next(5000).data().decode())
        first_b = next((k for k, s in enumerate(seen) if s.startswith("b-")), len(seen))
        result["a_writes_after_b"] = sum(1 for s in seen[first_b:] if s.startswith("a-"))
    stop.set()
    for p in procs:
        p.kill()
        p.wait()
    client.close()
    return result


def heartbeat_latency(service: str, http: str, n: int = 300) -> None:
    """Publish-to-read latency of a heartbeat on a membership topic (what a heartbeat lease adds)."""
    topic = create(http, f"heartbeats-{uuid.uuid4().hex[:6]}")
    client = pulsar.Client(service, logger=LOG)
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    producer = client.create_producer(topic, batching_enabled=False)
    lat = []
    for _ in range(n):
        producer.send(json.dumps({"t": time.time()}).encode())
        msg = reader.read_next(5000)
        lat.append(1000 * (time.time() - json.loads(msg.data())["t"]))
        time.sleep(0.01)
    lat.sort()
    print(f"heartbeat publish->read: p50 {lat[n // 2]:.2f} ms, p99 {lat[int(n * 0.99)]:.2f} ms, "
          f"max {lat[-1]:.2f} ms over {n}")
    client.close()


if __name__ == "__main__":
    if sys.argv[1] == "member":
        member(*sys.argv[2:6])
    elif sys.argv[3] == "heartbeat":
        heartbeat_latency(sys.argv[1], sys.argv[2])
    else:
        svc, http_url, how = sys.argv[1], sys.argv[2], sys.argv[3]
        n = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        out = [cycle(svc, http_url, how) for _ in range(n)]
        for r in out:
            print(json.dumps(r))
        times = [float(r["detect_s"]) for r in out if r["detect_s"] is not None]  # type: ignore[arg-type]
        if times:
            print(f"{how}: detection p50 {statistics.median(times):.3f} s, max {max(times):.3f} s over {len(times)}")
