"""What the Schema Registry's gateway tests share: a gateway over the in-memory
storage with its registry on a free port, confluent-kafka's client pointed at it, and
the synchronous clients run off the event loop that serves them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError

from kop.config.settings import KopConfig
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryBackend

T = TypeVar("T")

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [{"name": "name", "type": "string"}],
}
# v2 adds a field with a default: BACKWARD and FORWARD compatible with v1
USER_V2 = {**USER_V1, "fields": [*USER_V1["fields"], {"name": "age", "type": "int", "default": 0}]}
# the name's type changed: nothing reads the other
USER_BAD = {**USER_V1, "fields": [{"name": "name", "type": "int"}]}


def avro(value: dict[str, Any]) -> Schema:
    return Schema(json.dumps(value), "AVRO")


async def run(fn: Callable[..., T], *args: Any) -> T:
    """The client is synchronous; the gateway runs on this loop."""
    return await asyncio.to_thread(fn, *args)


@contextlib.asynccontextmanager
async def registry(
    backend: MemoryBackend | None = None, **config: Any
) -> AsyncIterator[tuple[SchemaRegistryClient, MemoryBackend, Gateway]]:
    backend = backend or MemoryBackend()
    port = free_port()
    settings = {
        "listen_host": "127.0.0.1", "port": free_port(), "admin_port": 0,
        "schema_registry_host": "127.0.0.1", "schema_registry_port": port, **config,
    }  # fmt: skip
    gateway = Gateway(KopConfig(**settings), backend)
    await gateway.start()
    try:
        yield SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"}), backend, gateway
    finally:
        await gateway.stop()


def refused(call: Callable[[], Any]) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as caught:
        call()
    return caught.value.http_status_code, caught.value.error_code


def consume(bootstrap: str, topic: str, n: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(20) == 0
