"""The storage port's SharedSubscription on kop's Pulsar client: a durable Shared
subscription's consumer (`wire/shared_consumer.py`), its deliveries as the port's
`Delivered` and its errors as the port's."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from kop.pulsar.wire import PulsarWireError, WireClient
from kop.pulsar.wire.shared_consumer import StaleDeliveryError, WireSharedConsumer
from kop.storage.types import Delivered, Position, StaleDelivery, StorageError


class PulsarShared:
    def __init__(self, raw: WireSharedConsumer) -> None:
        self._raw = raw

    @property
    def epoch(self) -> int:
        return self._raw.epoch

    async def receive(self) -> Delivered:
        try:
            got = await self._raw.receive()
        except PulsarWireError as exc:
            raise StorageError(f"{self._raw.topic}: {exc}", exc.retriable) from exc
        position = Position(got.entry.ledger, got.entry.entry)
        return Delivered(position, got.entry.redelivery_count, got.epoch)

    async def ack(self, deliveries: Sequence[Delivered]) -> None:
        try:
            await self._raw.ack(deliveries)
        except StaleDeliveryError as exc:
            raise StaleDelivery(str(exc)) from exc
        except PulsarWireError as exc:
            raise StorageError(f"acknowledging on {self._raw.topic}: {exc}", exc.retriable) from exc

    def release(self, deliveries: Sequence[Delivered]) -> None:
        self._raw.release(deliveries)

    async def close(self) -> None:
        with contextlib.suppress(PulsarWireError):  # the broker takes back what it held
            await self._raw.close()


async def open_shared(
    client: WireClient, topic: str, subscription: str, *, earliest: bool
) -> PulsarShared:
    try:
        raw = await client.create_shared_consumer(topic, subscription, earliest=earliest)
    except PulsarWireError as exc:
        raise StorageError(f"cannot subscribe to {topic} ({subscription}): {exc}") from exc
    return PulsarShared(raw)
