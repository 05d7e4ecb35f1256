"""Named listeners (Kafka's `listener.security.protocol.map`): two listeners of one
security protocol, one for clients inside a Kubernetes cluster and one for those
outside, each answering Metadata and FindCoordinator with its own advertised
addresses; and the settings that cannot work refused with one line."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.types import TopicName
from pydantic import ValidationError

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.server.endpoints import (
    EndpointError,
    SecurityProtocol,
    parse_endpoints,
    parse_protocol_map,
)
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryBackend


def test_a_name_the_map_gives_a_protocol() -> None:
    protocols = parse_protocol_map("internal:SASL_SSL, EXTERNAL:ssl")
    found = parse_endpoints("INTERNAL://:9092,EXTERNAL://0.0.0.0:9094,PLAINTEXT://:9093", protocols)
    assert [(e.listener, e.protocol, e.port) for e in found] == [
        ("INTERNAL", SecurityProtocol.SASL_SSL, 9092),
        ("EXTERNAL", SecurityProtocol.SSL, 9094),
        ("PLAINTEXT", SecurityProtocol.PLAINTEXT, 9093),  # a protocol is its own name
    ]
    assert str(found[1]) == "EXTERNAL://0.0.0.0:9094"
    for text, why in (
        ("OUTSIDE://:9094", "listener_security_protocol_map does not name it"),
        ("INTERNAL://:9092,INTERNAL://:9093", "named twice"),
    ):
        with pytest.raises(EndpointError, match=why):
            parse_endpoints(text, protocols)
    for text, why in (("INTERNAL", "NAME:PROTOCOL"), ("A:TLS", "not one of"),
                      ("A:SSL,A:SSL", "mapped twice")):  # fmt: skip
        with pytest.raises(EndpointError, match=why):
            parse_protocol_map(text)


def test_settings_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValidationError, match="does not name it"):
        KopConfig(listeners="INTERNAL://:9092")
    with pytest.raises(ValidationError, match="which no listener serves"):
        KopConfig(listeners="INTERNAL://:9092",
                  listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                  advertised_listeners="EXTERNAL://kafka.example.com:9094")  # fmt: skip
    with pytest.raises(ValidationError, match="needs ssl_cert_file"):
        KopConfig(listeners="OUTSIDE://:9094", listener_security_protocol_map="OUTSIDE:SSL")


def _addresses(port: int) -> tuple[list[tuple[str, int]], tuple[str, int]]:
    """What Metadata and FindCoordinator answer through the listener on `port`."""
    client = RawClient(port, timeout=10)
    try:
        topics = [MetadataRequestTopic(topic_id=None, name=TopicName("t"))]
        meta = client.request(3, 12, topics=topics, allow_auto_topic_creation=True,
                              include_topic_authorized_operations=False)  # fmt: skip
        found = client.request(10, 4, key_type=0, coordinator_keys=("g",))
        coordinator = found.coordinators[0]
        return [(b.host, b.port) for b in meta.brokers], (coordinator.host, coordinator.port)
    finally:
        client.close()


async def test_each_named_listener_answers_with_its_own_addresses() -> None:
    inside, outside = free_port(), free_port()
    config = KopConfig(
        listeners=f"INTERNAL://127.0.0.1:{inside},EXTERNAL://127.0.0.1:{outside}",
        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        advertised_listeners=(f"INTERNAL://localhost:{inside},EXTERNAL://127.0.0.1:31092"),
        admin_port=0,
    )
    gateway = Gateway(config, MemoryBackend())
    await gateway.start()
    try:
        assert gateway.kafka_ports == {"INTERNAL": inside, "EXTERNAL": outside}
        brokers_in, coordinator_in = await asyncio.to_thread(_addresses, inside)
        brokers_out, coordinator_out = await asyncio.to_thread(_addresses, outside)
    finally:
        await gateway.stop()
    # (kop checks an advertised name resolves: two names of this machine stand in for a
    # pod's DNS name and a load balancer's)
    assert brokers_in == [("localhost", inside)] and coordinator_in == ("localhost", inside)
    assert brokers_out == [("127.0.0.1", 31092)] and coordinator_out == ("127.0.0.1", 31092)
