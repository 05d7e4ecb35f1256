"""A fencing takeover with writes in flight, through kop's own client (docs/decisions.md D14).

Run against a PRIVATE standalone (the same-name case can deadlock it for good):
    python fence_takeover.py pulsar://localhost:6750 http://localhost:8180 other 6
    python fence_takeover.py pulsar://localhost:6750 http://localhost:8180 same 6
Each run: producer A (ExclusiveWithFencing) queues 20,000 entries; after the 5,000th,
producer B of another client takes the topic under another name ("other") or A's
("same"). One line per run: B's attach time and epoch, A's acknowledged and fenced
sends, then the broker's health (a deadlock shows as "Deadlocked threads detected").
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.error
import urllib.request
import uuid

from kop.pulsar.wire import WireClient, pb

SERVICE, HTTP = sys.argv[1], sys.argv[2]
NS = "public/fence-takeover"


def rest(method: str, path: str, body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{HTTP}/admin/v2/{path}", data=data, method=method,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        if exc.code != 409:  # already there
            raise
        return None
    return json.loads(raw) if raw else None


def health() -> str:
    try:
        with urllib.request.urlopen(f"{HTTP}/admin/v2/brokers/health", timeout=30) as resp:
            return resp.read().decode()[:80]
    except urllib.error.HTTPError as exc:
        return exc.read().decode()[:160]


async def run(same_name: bool) -> str:
    local = f"t-{uuid.uuid4().hex[:8]}"
    rest("PUT", f"persistent/{NS}/{local}")
    topic = f"persistent://{NS}/{local}"
    one, two = WireClient(SERVICE), WireClient(SERVICE)
    try:
        a = await one.create_producer(topic, access_mode=pb.ExclusiveWithFencing, name="kop-a")
        sent = []
        for i in range(20_000):
            sent.append(a.send(pb.MessageMetadata(), b"a%d" % i))
            if i == 5_000:
                started = time.monotonic()
                b = await asyncio.wait_for(
                    two.create_producer(
                        topic, access_mode=pb.ExclusiveWithFencing,
                        name="kop-a" if same_name else "kop-b",
                    ),
                    20,
                )  # fmt: skip
                took = 1000 * (time.monotonic() - started)
        await asyncio.wait(sent, timeout=60)
        acked = sum(1 for f in sent if f.done() and f.exception() is None)
        return (
            f"B in {took:.0f} ms, epoch {b.hold.epoch}, resumed after {b.hold.resumed_after}; "
            f"A: {acked} acknowledged, fenced {a.fenced}"
        )
    except TimeoutError:
        return "B never attached"
    finally:
        await asyncio.wait_for(asyncio.gather(one.close(), two.close()), 30)


if __name__ == "__main__":
    rest("PUT", f"namespaces/{NS}", {})
    rest("POST", f"namespaces/{NS}/deduplication", True)
    for n in range(int(sys.argv[4]) if len(sys.argv) > 4 else 1):
        try:
            outcome = asyncio.run(run(sys.argv[3] == "same"))
        except Exception as exc:  # what went wrong is the fact
            outcome = f"{type(exc).__name__}: {exc}"
        print(f"run {n}: {outcome}; broker health: {health()}", flush=True)
