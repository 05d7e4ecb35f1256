"""Client quotas end to end over the in-memory storage, through a Kafka client's
frames: AlterClientQuotas and DescribeClientQuotas as `kafka-configs` uses them,
kept in the store every instance reads; a client over its byte rate or its share of
the event loop is answered with `throttle_time_ms` and its next request is not read
until then; a client under a quota of its own is not slowed by another's."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, cast

from kio.schema.alter_client_quotas.v1.request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from kio.schema.describe_client_quotas.v1.request import DescribeClientQuotasRequest
from kio.static.primitive import f64

from conformance.clients.raw import RawClient
from kop.api import quotas
from kop.api.context import RequestContext, Services
from kop.protocol.errors import ErrorCode
from kop.protocol.records import Record, build_batch
from kop.quotas.book import QuotaBook
from kop.quotas.throttles import Throttles
from kop.security.authorizer import DENY_ALL
from kop.storage.naming import Namespace
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.sim.memory_admin import MemoryRecords

ALTER, DESCRIBE = 49, 48


def _alter(client: RawClient, entries: list[tuple[dict[str, str | None], dict[str, float | None]]],
           validate_only: bool = False) -> list[tuple[int, str | None]]:  # fmt: skip
    from kio.schema.alter_client_quotas.v1.request import EntityData, EntryData, OpData

    built = tuple(
        EntryData(
            entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in names.items()),
            ops=tuple(
                OpData(key=k, value=0.0 if v is None else v, remove=v is None)
                for k, v in ops.items()
            ),
        )
        for names, ops in entries
    )
    resp = client.request(ALTER, 1, entries=built, validate_only=validate_only)
    return [(int(e.error_code), e.error_message) for e in resp.entries]


def _describe(client: RawClient, entity_type: str, match_type: int, match: str | None = None,
              strict: bool = False) -> Any:  # fmt: skip
    from kio.schema.describe_client_quotas.v1.request import ComponentData

    component = ComponentData(entity_type=entity_type, match_type=match_type, match=match)
    return client.request(DESCRIBE, 1, components=(component,), strict=strict)


def _values(resp: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity):
            {v.key: v.value for v in entry.values}
        for entry in resp.entries
    }  # fmt: skip


def _batch(size: int) -> bytes:
    return build_batch([Record(0, int(time.time() * 1000), None, b"x" * size)])


def _produce(client: RawClient) -> tuple[int, int]:
    """One 50 KB produce: (error code, throttle_time_ms)."""
    resp = client.request(0, 9, **client.produce_fields("hot", _batch(50_000)))
    error = resp.responses[0].partition_responses[0].error_code
    return int(error), round(resp.throttle_time.total_seconds() * 1000)


def _quotas_scenario(port: int) -> dict[str, Any]:
    admin = RawClient(port)
    out: dict[str, Any] = {}
    out["alter"] = _alter(admin, [
        ({"client-id": None}, {"producer_byte_rate": 20_000}),
        ({"user": "ANONYMOUS", "client-id": "vip"}, {"producer_byte_rate": 1e9}),
        ({"ip": "10.0.0.1"}, {"connection_creation_rate": 5}),
        ({"user": None}, {"controller_mutation_rate": 5}),
        ({"user": "bob"}, {"made_up": 5}),
        ({"user": "bob"}, {"consumer_byte_rate": -1}),
        ({"user": "bob"}, {"request_percentage": 50}),
    ])  # fmt: skip
    out["dry run"] = _alter(admin, [({"user": "carol"}, {"request_percentage": 5})], True)
    out["users"] = _values(_describe(admin, "user", 2))
    out["default clients"] = _values(_describe(admin, "client-id", 1, strict=True))
    out["bob"] = _values(_describe(admin, "user", 0, "bob"))
    out["removed"] = _alter(admin, [({"user": "bob"}, {"request_percentage": None})])
    out["bob after"] = _values(_describe(admin, "user", 0, "bob"))

    slow, vip = RawClient(port), RawClient(port)
    slow.client_id, vip.client_id = "bulk", "vip"
    out["bulk"] = [_produce(slow) for _ in range(4)]
    out["vip"] = [_produce(vip) for _ in range(4)]
    # a throttled client's next request is not read before its throttle time ends
    _, throttle_ms = _produce(slow)
    began = time.monotonic()
    slow.request(18, 0)  # ApiVersions
    out["muted"] = (throttle_ms, (time.monotonic() - began) * 1000)
    for c in (admin, slow, vip):
        c.close()
    return out


async def test_quotas_are_set_described_and_throttle_a_producer_over_its_byte_rate() -> None:
    async with gateway_with_hot_topic(1) as (gateway, backend):
        out = await asyncio.to_thread(_quotas_scenario, gateway.kafka_port)
        stored = dict(backend.quotas.records)
    none, invalid = int(ErrorCode.none), int(ErrorCode.invalid_request)
    codes = [code for code, _ in out["alter"]]
    assert codes == [none, none, invalid, invalid, invalid, invalid, none]
    assert "max_connection_creation_rate_per_ip" in (out["alter"][2][1] or "")
    assert out["dry run"] == [(none, None)]
    assert out["users"] == {
        (("client-id", "vip"), ("user", "ANONYMOUS")): {"producer_byte_rate": 1e9},
        (("user", "bob"),): {"request_percentage": 50.0},
    }  # the dry run set nothing; the default user is not a named one
    assert out["default clients"] == {(("client-id", None),): {"producer_byte_rate": 20_000.0}}
    assert out["bob"] == {(("user", "bob"),): {"request_percentage": 50.0}}
    assert out["removed"] == [(none, None)] and out["bob after"] == {}
    # kept where every instance reads them: one record per entity
    assert stored == {
        "client-id=<default>": '{"producer_byte_rate": 20000.0}',
        "client-id=vip,user=ANONYMOUS": '{"producer_byte_rate": 1000000000.0}',
    }
    # 200 KB in a moment against 20 KB/s (averaged over Kafka's 10 s window): throttled,
    # and stored all the same (a quota slows a client, it never loses its records)
    assert all(error == none for error, _ in out["bulk"])
    assert max(ms for _, ms in out["bulk"]) > 0
    assert out["vip"] == [(none, 0)] * 4  # its own, more specific quota
    throttle_ms, waited_ms = out["muted"]
    assert throttle_ms > 0 and waited_ms >= throttle_ms * 0.9


def _metadata(client: RawClient) -> int:
    """One Metadata request: its throttle_time_ms."""
    resp = client.request(3, 12, topics=None, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)  # fmt: skip
    return round(resp.throttle_time.total_seconds() * 1000)


def _busy_scenario(port: int) -> dict[str, Any]:
    admin = RawClient(port)
    assert _alter(admin, [({"user": None}, {"request_percentage": 0.05})]) == [(0, None)]
    admin.close()
    busy = RawClient(port)
    throttles = []
    for _ in range(2000):
        throttles.append(_metadata(busy))
        if throttles[-1]:
            break
    throttled_at = time.monotonic()
    busy.close()
    # a new connection of the same client is held until the throttle time has passed
    fresh = RawClient(port)
    _metadata(fresh)
    fresh.close()
    return {"throttles": throttles, "fresh answered after": time.monotonic() - throttled_at}


async def test_a_client_over_its_share_of_the_event_loop_is_throttled() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _):
        out = await asyncio.to_thread(_busy_scenario, gateway.kafka_port)
    throttles = out["throttles"]
    assert throttles[-1] > 0, throttles  # 0.05% of the loop: 5 ms over the window
    # opening a connection per request does not skip the wait
    assert out["fresh answered after"] * 1000 >= throttles[-1] * 0.9


async def test_only_superusers_see_or_set_quotas() -> None:
    """Quotas name users and client ids of every tenant: a broker-wide operation."""
    services = cast(Services, SimpleNamespace(quotas=QuotaBook(MemoryRecords[str](), Throttles())))
    nobody = RequestContext(Namespace("public", "default"), "c", 1, access=DENY_ALL)
    entity = EntityData(entity_type="user", entity_name="eve")
    op = OpData(key="request_percentage", value=f64(1e6), remove=False)
    described = await quotas.describe(
        services, nobody, DescribeClientQuotasRequest(components=(), strict=False)
    )
    altered = await quotas.alter(services, nobody, AlterClientQuotasRequest(
        validate_only=False, entries=(EntryData(entity=(entity,), ops=(op,)),)
    ))  # fmt: skip
    assert described.answer.error_code is ErrorCode.cluster_authorization_failed
    assert [e.error_code for e in altered.answer.entries] == [
        ErrorCode.cluster_authorization_failed
    ]
    assert services.quotas is not None and services.quotas.describe((), False) == []


async def test_another_instance_answers_with_what_was_just_set() -> None:
    """kafka-configs describes before it deletes, at whichever instance it reaches: an
    instance between two refreshes answered from its old copy ('Invalid config(s)'),
    and an alteration there wrote its old copy over the newer one (the conformance
    tier's three instances found it)."""
    store, admin = MemoryRecords[str](), RequestContext(Namespace("public", "default"), "c", 1)
    a, b = (cast(Services, SimpleNamespace(quotas=QuotaBook(store, Throttles(), 3600)))
            for _ in range(2))  # fmt: skip
    user = (EntityData(entity_type="user", entity_name="eve"),)
    every = DescribeClientQuotasRequest(components=(), strict=False)

    def request(key: str, value: float, remove: bool = False) -> AlterClientQuotasRequest:
        op = OpData(key=key, value=f64(value), remove=remove)
        return AlterClientQuotasRequest(
            validate_only=False, entries=(EntryData(entity=user, ops=(op,)),)
        )

    await quotas.describe(b, admin, every)  # b's copy: empty
    await quotas.alter(a, admin, request("request_percentage", 50.0))
    described = (await quotas.describe(b, admin, every)).answer
    assert [v.key for e in described.entries or () for v in e.values] == ["request_percentage"]
    await quotas.alter(b, admin, request("producer_byte_rate", 1024.0))
    assert store.records == {
        "user=eve": '{"producer_byte_rate": 1024.0, "request_percentage": 50.0}'
    }
