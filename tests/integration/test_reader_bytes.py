"""What kop's Pulsar readers hold, against the real broker (issue 19): read-ahead is
bounded in bytes across readers, not by a message count per reader."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.error
import uuid
from collections.abc import Iterator

import pytest

from kop.pulsar.wire import WireClient, pb
from kop.pulsar.wire.read_ahead import FRAME_OVERHEAD
from tests.integration.conftest import PULSAR_URL
from tests.integration.observe import pulsar_rest

MiB = 1 << 20


@pytest.fixture(scope="module")
def namespace(pulsar: str) -> Iterator[str]:
    ns = f"public/rbytes-{uuid.uuid4().hex[:10]}"
    pulsar_rest("PUT", f"namespaces/{ns}", {})
    yield ns
    with contextlib.suppress(urllib.error.URLError):
        for name in pulsar_rest("GET", f"persistent/{ns}") or []:
            local = name.rsplit("/", 1)[1]
            pulsar_rest("DELETE", f"persistent/{ns}/{local}?force=true")
        pulsar_rest("DELETE", f"namespaces/{ns}")


@pytest.fixture
def topic(namespace: str) -> str:
    return f"persistent://{namespace}/t-{uuid.uuid4().hex[:12]}"


async def test_a_reader_of_1_mib_entries_holds_the_budget_not_its_queue(topic: str) -> None:
    """Before: 1,000 permits of 1 MiB entries, all 120 entries fetched at once (120 MiB
    held for a consumer that had read none). Now: the 16 MiB budget plus one entry."""
    client = WireClient(PULSAR_URL, read_ahead_bytes=16 * MiB)
    try:
        producer = await client.create_producer(topic)
        sends = [producer.send(pb.MessageMetadata(), bytes([i]) * MiB) for i in range(120)]
        await asyncio.gather(*sends)
        await producer.close()
        budget = client.read_ahead
        reader = await client.create_reader(topic, None, receiver_queue=1000)
        async with asyncio.timeout(30):  # it fetches ahead up to the budget...
            while budget.held < budget.limit - 2 * MiB:
                await asyncio.sleep(0.01)
        for i in range(120):  # ...and never past it while the consumer catches up
            raw = await asyncio.wait_for(reader.read(), 30)
            assert raw.payload[:1] == bytes([i]) and len(raw.payload) == MiB
        print(f"\npeak read-ahead held: {budget.peak_held / MiB:.1f} MiB (budget 16 MiB)")
        assert budget.peak_held <= budget.limit + MiB + FRAME_OVERHEAD
        await reader.close()
        assert (budget.held, budget.reserved) == (0, 0)
    finally:
        await client.close()
