"""The Schema Registry over the in-memory storage, driven by confluent-kafka's own
SchemaRegistryClient and Avro serializer: a `<topic>-value` subject is the topic's
schema in (the twin of) Pulsar's schema registry, other subjects are kop's alone, and
every refusal carries Confluent's status and error code."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kop.entries import framing
from kop.storage import batch_layout
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import CONSUME, PRODUCE
from kop.storage.types import OutgoingEntry, OutgoingMessage
from kop.wiring.errors import StartupError
from tests.gateway.memory_gateway import CLUSTER_SECRET
from tests.gateway.registry_harness import (
    USER_BAD,
    USER_V1,
    USER_V2,
    avro,
    consume,
    produce,
    refused,
    registry,
    run,
)
from tests.sim.memory_admin import MemoryBackend
from tests.tls_material import Ca, TokenKeys

DEFAULT = Namespace("public", "default")
ACME = Namespace("acme", "orders")
GLOBEX = Namespace("globex", "main")


async def test_a_topic_value_subject_is_the_topics_schema_in_pulsar() -> None:
    async with registry() as (client, backend, _):
        first = await run(client.register_schema, "orders-value", avro(USER_V1))
        again = await run(client.register_schema, "orders-value", avro(USER_V1))
        assert first == again == 1
        orders = PulsarTopic(DEFAULT, "orders", "orders")
        history = await backend.schemas.history(orders)
        assert [(h.version, h.type) for h in history] == [(0, "AVRO")]
        assert json.loads(history[0].data)["name"] == "User"
        second = await run(client.register_schema, "orders-value", avro(USER_V2))
        assert second == 2
        assert [h.version for h in await backend.schemas.history(orders)] == [0, 1]
        latest = await run(client.get_latest_version, "orders-value")
        assert (latest.version, latest.schema_id) == (2, 2)
        assert await run(client.get_versions, "orders-value") == [1, 2]
        found = await run(client.lookup_schema, "orders-value", avro(USER_V1))
        assert (found.version, found.schema_id) == (1, 1)
        assert json.loads((await run(client.get_schema, 2)).schema_str) == USER_V2


async def test_the_topics_strategy_refuses_for_both_sides() -> None:
    """The subject's level is the topic's strategy in Pulsar: what the REST API refuses,
    a Pulsar producer's upload is refused too."""
    async with registry() as (client, backend, _):
        await run(client.register_schema, "orders-value", avro(USER_V1))
        await run(client.set_compatibility, "orders-value", "BACKWARD")
        orders = PulsarTopic(DEFAULT, "orders", "orders")
        assert await backend.schemas.topic_strategy(orders) == "BACKWARD"
        assert await run(client.get_compatibility, "orders-value") == "BACKWARD"
        status, code = await run(
            refused, lambda: client.register_schema("orders-value", avro(USER_BAD))
        )
        assert (status, code) == (409, 409)
        assert not await run(client.test_compatibility, "orders-value", avro(USER_BAD))
        assert await run(client.test_compatibility, "orders-value", avro(USER_V2))
        from kop.storage.schemas import SchemaRefused

        with pytest.raises(SchemaRefused) as pulsar_said:
            await backend.schemas.upload(orders, "AVRO", json.dumps(USER_BAD))
        assert pulsar_said.value.incompatible


async def test_a_version_a_pulsar_producer_added_is_a_version_with_an_id() -> None:
    async with registry() as (client, backend, _):
        await run(client.register_schema, "orders-value", avro(USER_V1))
        orders = PulsarTopic(DEFAULT, "orders", "orders")
        # what Pulsar's Python client uploads: pretty-printed JSON
        assert await backend.schemas.upload(orders, "AVRO", json.dumps(USER_V2, indent=1)) == 1
        assert await run(client.get_versions, "orders-value") == [1, 2]
        v2 = await run(client.get_version, "orders-value", 2)
        assert v2.schema_id == 2
        assert json.loads(v2.schema.schema_str) == USER_V2
        # the same schema registered through the REST API is that version
        assert await run(client.register_schema, "orders-value", avro(USER_V2)) == 2


async def test_records_written_by_the_avro_serializer_read_back_through_the_registry() -> None:
    async with registry() as (client, _, _g):
        serialize = AvroSerializer(client, json.dumps(USER_V1))
        deserialize = AvroDeserializer(client)
        ctx = SerializationContext("orders", MessageField.VALUE)
        data = await run(serialize, {"name": "ada"}, ctx)
        assert data[:5] == b"\x00\x00\x00\x00\x01"  # Confluent's framing: magic 0, id 1
        assert await run(deserialize, data, ctx) == {"name": "ada"}
        assert await run(client.get_subjects) == ["orders-value"]


async def test_a_subject_no_topic_has_is_kept_by_kop_with_confluents_deletes() -> None:
    """RecordNameStrategy's subject: checked by kop under the global level, soft and
    permanent deletes with Confluent's codes, numbering again from 1 after a
    permanent delete."""
    async with registry() as (client, backend, _):
        subject = "com.example.User"
        assert await run(client.register_schema, subject, avro(USER_V1)) == 1
        assert await run(client.register_schema, subject, avro(USER_V2)) == 2
        assert await backend.schemas.history(PulsarTopic(DEFAULT, subject, subject)) == []
        await run(client.set_compatibility, subject, "FULL")
        assert (await run(refused, lambda: client.register_schema(subject, avro(USER_BAD)))) == (
            409,
            409,
        )
        assert await run(client.delete_version, subject, 1) == 1
        assert (await run(refused, lambda: client.delete_version(subject, 1))) == (404, 40406)
        assert await run(client.get_versions, subject) == [2]
        assert (await run(refused, lambda: client.delete_subject(subject, True))) == (404, 40405)
        assert await run(client.delete_subject, subject) == [2]
        assert (await run(refused, lambda: client.delete_subject(subject))) == (404, 40404)
        assert (await run(refused, lambda: client.get_versions(subject))) == (404, 40401)
        assert await run(client.delete_subject, subject, True) == [1, 2]
        assert await run(client.get_subjects) == []
        assert await run(client.register_schema, subject, avro(USER_V2)) == 2  # the same id
        assert await run(client.get_versions, subject) == [1]


async def test_bad_requests_get_confluents_codes() -> None:
    async with registry() as (client, _, _g):
        assert (
            await run(
                refused,
                lambda: client.register_schema("x-value", Schema('{"type": "recrd"}', "AVRO")),
            )
        ) == (422, 42201)
        assert (
            await run(
                refused,
                lambda: client.register_schema("x-value", Schema('{"type": "object"}', "JSON")),
            )
        ) == (422, 42201)
        assert (await run(refused, lambda: client.get_versions("nobody-value"))) == (404, 40401)
        assert (await run(refused, lambda: client.get_schema(99))) == (404, 40403)
        await run(client.register_schema, "x-value", avro(USER_V1))
        assert (await run(refused, lambda: client.get_version("x-value", 7))) == (404, 40402)
        assert (await run(refused, lambda: client.lookup_schema("x-value", avro(USER_V2)))) == (
            404,
            40403,
        )
        assert (await run(refused, lambda: client.set_compatibility("x-value", "SIDEWAYS"))) == (
            422,
            42203,
        )
        assert (await run(refused, lambda: client.get_compatibility("y.Kept"))) == (404, 40408)


async def test_an_id_handed_out_by_one_instance_is_found_through_another() -> None:
    backend = MemoryBackend()
    async with registry(backend, node_id=1, cluster_secret=CLUSTER_SECRET) as (one, _, _g):
        other_backend = backend.instance()
        async with registry(other_backend, node_id=2, cluster_secret=CLUSTER_SECRET) as (
            two,
            _,
            _g2,
        ):
            a = await run(one.register_schema, "a-value", avro(USER_V1))
            b = await run(two.register_schema, "com.example.Other", avro(USER_V2))
            assert {a, b} == {1, 2}  # one numbering, whichever instance was asked
            assert json.loads((await run(two.get_schema, a)).schema_str) == USER_V1
            assert json.loads((await run(one.get_schema, b)).schema_str) == USER_V2


async def test_a_tenant_sees_and_numbers_only_its_own_subjects(tmp_path: Path) -> None:
    """Basic `tenant/namespace:token:<JWT>` as the Kafka listener's PLAIN takes it; Pulsar's
    permissions decide; ids are numbered per namespace."""
    backend = MemoryBackend()
    perms = backend.permissions
    for ns, name in ((ACME, "t1"), (GLOBEX, "secret")):
        await backend.admin.serve_namespace(ns)
        await backend.admin.create_partitioned(PulsarTopic(ns, name, name), 1, {})
    await perms.grant(ACME, None, "alice", frozenset({PRODUCE, CONSUME}))
    await perms.grant(GLOBEX, None, "eve", frozenset({PRODUCE, CONSUME}))
    keys = TokenKeys.make(tmp_path)
    config = {"auth_token_secret_key": keys.spec, "authorization_enabled": True}
    async with registry(backend, **config) as (anonymous, _, _gateway):
        url = anonymous._rest_client.base_urls[0]

        def as_(role: str, ns: Namespace) -> SchemaRegistryClient:
            info = f"{ns.path}:token:{keys.token(role)}"
            return SchemaRegistryClient({"url": url, "basic.auth.user.info": info})

        alice, eve = as_("alice", ACME), as_("eve", GLOBEX)
        assert await run(alice.register_schema, "t1-value", avro(USER_V1)) == 1
        assert await run(eve.register_schema, "secret-value", avro(USER_V2)) == 1
        assert await run(alice.get_subjects) == ["t1-value"]
        assert await run(eve.get_subjects) == ["secret-value"]
        assert json.loads((await run(eve.get_schema, 1)).schema_str) == USER_V2
        eve_in_acme = as_("eve", ACME)
        assert (await run(refused, lambda: eve_in_acme.get_versions("t1-value")))[0] == 403
        assert (await run(refused, lambda: eve_in_acme.get_schema(1)))[0] == 403
        assert (await run(refused, anonymous.get_subjects)) == (401, 40101)
        assert await backend.schemas.history(PulsarTopic(GLOBEX, "t1", "t1")) == []


async def test_the_registry_serves_https_with_the_listeners_certificate(tmp_path: Path) -> None:
    ca = Ca.make(tmp_path)
    cert, key = ca.issue("server", "localhost", server=True)
    tls = {"ssl_cert_file": str(cert), "ssl_key_file": str(key), "schema_registry_tls": True}
    async with registry(**tls) as (plain, _, _g):
        port = int(plain._rest_client.base_urls[0].rsplit(":", 1)[1])
        client = SchemaRegistryClient(
            {"url": f"https://localhost:{port}", "ssl.ca.location": str(ca.cert_file)}
        )
        assert await run(client.register_schema, "s-value", avro(USER_V1)) == 1
        with pytest.raises(Exception):  # noqa: B017 - plain HTTP to a TLS port: no answer
            await run(plain.get_subjects)


async def test_tls_without_a_certificate_is_refused_at_start() -> None:
    with pytest.raises(StartupError, match="schema_registry_tls needs ssl_cert_file"):
        async with registry(schema_registry_tls=True):
            pass


async def test_kafka_records_are_stored_bare_for_pulsar_and_read_back_framed() -> None:
    """A registry serializer's records are Pulsar messages of the topic's schema version
    (their value the bare Avro a Pulsar `AvroSchema` consumer decodes), and read back
    through Kafka with Confluent's framing; a typed Pulsar producer's message is read
    through Kafka framed with its version's id."""
    async with registry() as (client, backend, gateway):
        orders = PulsarTopic(DEFAULT, "orders", "orders")
        await backend.admin.create_partitioned(orders, 1, {})
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        serialize = AvroSerializer(client, json.dumps(USER_V1))
        ctx = SerializationContext("orders", MessageField.VALUE)
        framed = [await run(serialize, {"name": n}, ctx) for n in ("ada", "bob")]

        await run(produce, bootstrap, "orders", framed)
        stored = [e for e in backend.log.topic(orders.partition(0)).entries() if e.count]
        pulsar_view = [
            (e.schema_version, m.payload) for e in stored for m in batch_layout.messages(e)
        ]
        parsed = fastavro.parse_schema(USER_V1)
        assert [v for v, _ in pulsar_view] == [framing.version_bytes(0)] * 2
        assert [fastavro.schemaless_reader(io.BytesIO(p), parsed) for _, p in pulsar_view] == [
            {"name": "ada"}, {"name": "bob"},
        ]  # fmt: skip
        assert await run(consume, bootstrap, "orders", 2) == framed
        # a typed Pulsar producer's message, in version 0
        bare = io.BytesIO()
        fastavro.schemaless_writer(bare, parsed, {"name": "eve"})
        message = OutgoingMessage(bare.getvalue(), {}, None, None)
        entry = OutgoingEntry.of(message)
        typed = dataclasses.replace(entry, schema_version=framing.version_bytes(0))
        backend.log.topic(orders.partition(0)).append([typed], "pulsar-app", 0)
        deserialize = AvroDeserializer(client)
        values = await run(consume, bootstrap, "orders", 3)
        assert [await run(deserialize, v, ctx) for v in values] == [
            {"name": "ada"}, {"name": "bob"}, {"name": "eve"},
        ]  # fmt: skip


async def test_a_topic_whose_config_says_so_keeps_the_framing_as_it_came() -> None:
    async with registry() as (client, backend, gateway):
        raw = PulsarTopic(DEFAULT, "raw", "raw")
        await backend.admin.create_partitioned(
            raw, 1, {"kafka.kop.schema.registry.framing": "false"}
        )
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        serialize = AvroSerializer(client, json.dumps(USER_V1))
        value = await run(
            serialize, {"name": "ada"}, SerializationContext("raw", MessageField.VALUE)
        )

        await run(produce, bootstrap, "raw", [value])
        stored = [e for e in backend.log.topic(raw.partition(0)).entries() if e.count]
        assert [
            (e.schema_version, m.payload) for e in stored for m in batch_layout.messages(e)
        ] == [(None, value)]
        assert await run(consume, bootstrap, "raw", 1) == [value]


async def test_a_pulsar_producers_schema_kop_never_saw_is_read_framed_with_a_new_id() -> None:
    async with registry() as (client, backend, gateway):
        events = PulsarTopic(DEFAULT, "events", "events")
        await backend.admin.create_partitioned(events, 1, {})
        # a typed Pulsar producer made the topic's schema; kop's registry never heard of it
        assert await backend.schemas.upload(events, "AVRO", json.dumps(USER_V1, indent=1)) == 0
        parsed = fastavro.parse_schema(USER_V1)
        bare = io.BytesIO()
        fastavro.schemaless_writer(bare, parsed, {"name": "eve"})
        entry = OutgoingEntry.of(OutgoingMessage(bare.getvalue(), {}, None, None))
        typed = dataclasses.replace(entry, schema_version=framing.version_bytes(0))
        backend.log.topic(events.partition(0)).append([typed], "pulsar-app", 0)
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        (value,) = await run(consume, bootstrap, "events", 1)
        assert framing.schema_id(value) == 1
        ctx = SerializationContext("events", MessageField.VALUE)
        assert await run(AvroDeserializer(client), value, ctx) == {"name": "eve"}
        assert await run(client.get_versions, "events-value") == [1]
