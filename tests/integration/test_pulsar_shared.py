"""kop's consumer of a durable Shared subscription (kop/pulsar/wire/shared_consumer.py)
against the real broker: the Pulsar side of a Kafka share group (D27). What it
acknowledges nobody receives again, what it releases comes back with its
redelivery counted, what it held when it left goes to the subscription's other
consumers (a Pulsar application's among them), and a delivery made before a
reconnect cannot be acknowledged after it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pulsar
import pytest

from kop.pulsar.wire import WireClient
from kop.pulsar.wire.shared_consumer import Delivery, StaleDeliveryError, WireSharedConsumer
from tests.integration.conftest import PULSAR_URL
from tests.integration.observe import dedup_namespace, pulsar_rest, unload


@pytest.fixture(scope="module")
def namespace(pulsar: str) -> Iterator[str]:
    with dedup_namespace("shared") as ns:
        yield ns


@pytest.fixture
def topic(namespace: str) -> str:
    local = f"s-{uuid.uuid4().hex[:12]}"
    pulsar_rest("PUT", f"persistent/{namespace}/{local}/partitions", 1)
    return f"persistent://{namespace}/{local}-partition-0"


@pytest.fixture
async def client(pulsar: str) -> AsyncIterator[WireClient]:
    wire = WireClient(PULSAR_URL, operation_timeout_s=10.0)
    yield wire
    await wire.close()


def _produce(topic: str, count: int) -> None:
    """`count` unbatched messages `m0`, `m1`, ... written by Pulsar's own client."""
    native = pulsar.Client(PULSAR_URL)
    try:
        producer = native.create_producer(topic, batching_enabled=False)
        for i in range(count):
            producer.send(f"m{i}".encode())
        producer.close()
    finally:
        native.close()


async def _take(consumer: WireSharedConsumer, count: int, timeout_s: float = 20) -> list[Delivery]:
    got: list[Delivery] = []
    async with asyncio.timeout(timeout_s):
        while len(got) < count:
            got.append(await consumer.receive())
    return got


async def _nothing_more(consumer: WireSharedConsumer, within_s: float = 1.5) -> bool:
    """Nothing is delivered within `within_s` (a bounded wait for an absence)."""
    try:
        async with asyncio.timeout(within_s):
            await consumer.receive()
    except TimeoutError:
        return True
    return False


def _payloads(deliveries: list[Delivery]) -> list[bytes]:
    return [d.entry.payload for d in deliveries]


async def test_acknowledged_entries_never_come_back(client: WireClient, topic: str) -> None:
    _produce(topic, 10)
    sub = f"kop-share-{uuid.uuid4().hex[:6]}"
    consumer = await client.create_shared_consumer(topic, sub, earliest=True)
    got = await _take(consumer, 10)
    assert sorted(_payloads(got)) == sorted(f"m{i}".encode() for i in range(10))
    assert all(d.entry.redelivery_count == 0 for d in got)
    await consumer.ack(got[:6])  # answered only once the broker has them
    await consumer.close()
    again = await client.create_shared_consumer(topic, sub, earliest=True)
    back = await _take(again, 4)
    assert sorted(_payloads(back)) == sorted(_payloads(got[6:]))
    assert await _nothing_more(again)
    await again.close()


async def test_a_released_entry_comes_back_counted(client: WireClient, topic: str) -> None:
    _produce(topic, 3)
    consumer = await client.create_shared_consumer(topic, "kop-share-rel", earliest=True)
    first = await _take(consumer, 3)
    released = [d for d in first if d.entry.payload == b"m1"]
    consumer.release(released)
    await consumer.ack([d for d in first if d.entry.payload != b"m1"])
    (again,) = await _take(consumer, 1)
    assert again.entry.payload == b"m1" and again.position == released[0].position
    assert again.entry.redelivery_count == 1
    consumer.release([again])
    (third,) = await _take(consumer, 1)
    assert third.entry.redelivery_count == 2
    await consumer.ack([third])
    assert await _nothing_more(consumer)
    await consumer.close()


async def test_a_new_subscription_starts_where_asked(client: WireClient, topic: str) -> None:
    _produce(topic, 2)
    latest = await client.create_shared_consumer(topic, "kop-share-latest", earliest=False)
    earliest = await client.create_shared_consumer(topic, "kop-share-earliest", earliest=True)
    _produce(topic, 1)  # m0 again, after both exist
    from_start = await _take(earliest, 3)
    assert _payloads(from_start) == [b"m0", b"m1", b"m0"]
    (only,) = await _take(latest, 1)
    assert only.position == from_start[2].position
    assert await _nothing_more(latest)
    await latest.close()
    await earliest.close()


async def test_kop_and_a_pulsar_application_split_one_subscription(
    client: WireClient, topic: str
) -> None:
    """Each entry goes to one of them; what kop held when it left goes to the
    application, never what kop acknowledged."""
    sub = "kop-share-split"
    native = pulsar.Client(PULSAR_URL)
    try:
        app = native.subscribe(
            topic, sub, consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10
        )
        kop = await client.create_shared_consumer(topic, sub, earliest=True, receiver_queue=10)
        await asyncio.to_thread(_produce, topic, 200)
        mine = await _take(kop, 10)
        await kop.ack(mine[:5])
        await kop.close()  # mine[5:] and whatever else it was sent go back

        seen: list[bytes] = []

        def drain() -> None:
            while True:
                try:
                    msg = app.receive(timeout_millis=3000)
                except pulsar.Timeout:
                    return
                seen.append(msg.data())
                app.acknowledge(msg)

        await asyncio.to_thread(drain)
        kept = set(_payloads(mine[:5]))
        assert not kept & set(seen), "an acknowledged entry was delivered again"
        assert sorted(seen + list(kept)) == sorted(f"m{i}".encode() for i in range(200))
        app.close()
    finally:
        native.close()


async def test_deliveries_before_a_reconnect_are_not_acknowledged_after_it(
    client: WireClient, topic: str
) -> None:
    _produce(topic, 2)
    consumer = await client.create_shared_consumer(topic, "kop-share-unload", earliest=True)
    before = await _take(consumer, 2)
    epoch = consumer.epoch
    namespace, local = topic.removeprefix("persistent://").rsplit("/", 1)
    unload(local.removesuffix("-partition-0"), namespace)
    back = await _take(consumer, 2, timeout_s=30)  # the broker gave them out again
    assert consumer.epoch > epoch
    assert sorted(_payloads(back)) == [b"m0", b"m1"]
    with pytest.raises(StaleDeliveryError):
        await consumer.ack(before)
    consumer.release(before)  # already back: nothing sent
    await consumer.ack(back)
    assert await _nothing_more(consumer)
    await consumer.close()
