"""Produce is advertised from v0, as Kafka 4.x advertises it (KAFKA-18659: older
librdkafka stops compressing, without a word, when the range starts later), and
served from v3: a v0-v2 request closes the connection, as Kafka 4.3.1 does.
Produce v3+ is unchanged."""

from __future__ import annotations

import asyncio

from conformance.clients.raw import RawClient
from conformance.scenarios.old_produce import exchange, legacy_message, old_produce, produce_range
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic


async def test_produce_is_advertised_from_v0_and_v0_to_v2_close_the_connection() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _):
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        advertised = await asyncio.to_thread(produce_range, bootstrap)
        batch = build_batch([Record(0, 1_700_000_000_000, None, b"v")])
        old = {
            (version, magic): await asyncio.to_thread(
                exchange, bootstrap, old_produce(version, "hot", data)
            )
            for version in (0, 1, 2)
            for magic, data in ((2, batch), (1, legacy_message(1, b"v")))
        }
        client = RawClient(gateway.kafka_port)
        try:
            code, offset = await asyncio.to_thread(client.produce, "hot", batch)
        finally:
            client.close()
    assert advertised == [0, 12]  # v12: transaction version 2's implicit add
    assert set(old.values()) == {"connection closed"}
    assert (code.name, offset) == ("none", 0)
