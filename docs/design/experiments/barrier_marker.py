"""Could a new owner's barrier be an entry Pulsar applications never see? (D15)

Run against a standalone:
    python barrier_marker.py pulsar://localhost:6650 http://localhost:8080
A fencing producer writes "one", then an entry whose metadata carries `marker_type`
(a server-only marker, as Pulsar's own replicated-subscription and transaction markers
are), then "two". Printed: where each was stored, what the last message id says (REST
and binary) while the marker is the last entry, what a reader from the earliest entry
delivers, and whether the reader thinks more is to come.
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.request
import uuid

from kop.pulsar.wire import WireClient, pb

SERVICE, HTTP = sys.argv[1], sys.argv[2]
NS = "public/default"


def rest(method: str, path: str) -> object:
    request = urllib.request.Request(f"{HTTP}/admin/v2/{path}", method=method)
    with urllib.request.urlopen(request, timeout=30) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


async def main() -> None:
    local = f"barrier-{uuid.uuid4().hex[:6]}"
    rest("PUT", f"persistent/{NS}/{local}")
    topic = f"persistent://{NS}/{local}"
    client = WireClient(SERVICE)
    try:
        producer = await client.create_producer(
            topic, access_mode=pb.ExclusiveWithFencing, name="kop-x"
        )
        print("one stored at", await producer.send(pb.MessageMetadata(), b"one"))
        marker = pb.MessageMetadata()
        marker.marker_type = 0
        print("marker stored at", await producer.send(marker, b""))
        print("last message id (REST):", rest("GET", f"persistent/{NS}/{local}/lastMessageId"))
        reader = await client.create_reader(topic, None)
        print("reader has more:", await reader.has_message_available())
        first = await asyncio.wait_for(reader.read(), 5)
        print("read", (first.ledger, first.entry), first.payload)
        print("reader has more:", await reader.has_message_available())
        try:
            more = await asyncio.wait_for(reader.read(), 3)
            print("read", (more.ledger, more.entry), more.payload)
        except TimeoutError:
            print("nothing delivered within 3 s")
        print("two stored at", await producer.send(pb.MessageMetadata(), b"two"))
        second = await asyncio.wait_for(reader.read(), 5)
        print("read", (second.ledger, second.entry), second.payload)
        print("reader has more:", await reader.has_message_available())
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
