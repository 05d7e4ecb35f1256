"""Incremental fetch sessions (KIP-227) through a whole gateway over the in-memory
storage, with real Fetch requests at every version that has sessions (7-12): a full
fetch opens a session, incremental fetches name only what changed and are answered
only with partitions that have something to say, forgotten partitions leave, a wrong
epoch or an unknown id is refused as Kafka refuses them, and epoch -1 closes. Below
v7 a fetch has no session fields and is answered in full with session id 0."""

from __future__ import annotations

import asyncio
import datetime
import importlib
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic

SESSION_VERSIONS = range(7, 13)


class Fetcher:
    """A client's side of a session, as a test spells it out: each request says its
    session id, epoch, the partitions (index, offset) it names and those it forgets."""

    def __init__(self, client: RawClient, version: int) -> None:
        self.client, self.version = client, version
        self._m = importlib.import_module(f"kio.schema.fetch.v{version}.request")

    def fetch(
        self, session_id: int, epoch: int, named: dict[int, int], forgotten: tuple[int, ...] = ()
    ) -> Any:
        parts = tuple(
            self._m.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
            for p, o in named.items()
        )
        topics = (self._m.FetchTopic(topic="hot", partitions=parts),) if parts else ()
        forget = (self._m.ForgottenTopic(topic="hot", partitions=forgotten),) if forgotten else ()
        fields: dict[str, Any] = {
            "max_wait": datetime.timedelta(milliseconds=0), "min_bytes": 1,
            "max_bytes": 1 << 20, "isolation_level": 0, "topics": topics,
        }  # fmt: skip
        if self.version >= 7:
            fields |= {"session_id": session_id, "session_epoch": epoch}
            fields["forgotten_topics_data"] = forget
        return self.client.request(1, self.version, **fields)


def produce(client: RawClient, partition: int, value: bytes) -> None:
    fields = client.produce_fields("hot", build_batch([Record(0, 1, None, value)]))
    topic = fields["topic_data"][0]
    part = type(topic.partition_data[0])(index=partition, records=topic.partition_data[0].records)
    fields["topic_data"] = (type(topic)(name="hot", partition_data=(part,)),)
    resp = client.request(0, 9, **fields)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.none


def named(resp: Any) -> dict[int, tuple[int, int]]:
    """Partition -> (record bytes, high watermark) of an answer."""
    return {
        p.partition_index: (len(p.records or b""), p.high_watermark)
        for t in resp.responses
        for p in t.partitions
    }


def session_story(port: int, version: int) -> None:
    client = RawClient(port)
    try:
        f = Fetcher(client, version)
        produce(client, 0, b"a")
        produce(client, 1, b"b")
        full = f.fetch(0, 0, {0: 0, 1: 0})
        sid = full.session_id
        assert full.error_code == ErrorCode.none and sid != 0
        assert {p: hw for p, (_, hw) in named(full).items()} == {0: 1, 1: 1}
        assert all(n > 0 for n, _ in named(full).values())
        # the client names its new positions; nothing else changed: an empty answer
        quiet = f.fetch(sid, 1, {0: 1, 1: 1})
        assert (quiet.error_code, quiet.session_id, named(quiet)) == (ErrorCode.none, sid, {})
        produce(client, 1, b"c")
        moved = f.fetch(sid, 2, {})  # names nothing: the session remembers offset 1
        assert list(named(moved)) == [1] and named(moved)[1][1] == 2 and named(moved)[1][0] > 0
        forgot = f.fetch(sid, 3, {1: 2}, forgotten=(0,))
        assert named(forgot) == {}
        produce(client, 0, b"d")
        assert named(f.fetch(sid, 4, {})) == {}  # partition 0 left the session
        added = f.fetch(sid, 5, {0: 1})  # added back at its position: records, hw 2
        assert list(named(added)) == [0] and named(added)[0][1] == 2
        stale = f.fetch(sid, 5, {})
        assert (stale.error_code, stale.session_id, named(stale)) == (
            ErrorCode.invalid_fetch_session_epoch, 0, {},
        )  # fmt: skip
        unknown = f.fetch(sid ^ 0x5A5A5A5, 1, {0: 0})
        assert (unknown.error_code, named(unknown)) == (ErrorCode.fetch_session_id_not_found, {})
        closing = f.fetch(sid, -1, {0: 2, 1: 2})  # final: answered in full, no session
        assert (closing.error_code, closing.session_id) == (ErrorCode.none, 0)
        assert set(named(closing)) == {0, 1}
        gone = f.fetch(sid, 6, {})
        assert gone.error_code == ErrorCode.fetch_session_id_not_found
    finally:
        client.close()


@pytest.mark.parametrize("version", SESSION_VERSIONS)
async def test_a_session_answers_only_what_changed(version: int) -> None:
    async with gateway_with_hot_topic(2) as (gateway, _):
        await asyncio.to_thread(session_story, gateway.kafka_port, version)
        sessions = gateway.running.services.fetch_sessions
        assert sessions.sessions == 0  # the story closed its session


def old_versions(port: int) -> list[Any]:
    client = RawClient(port)
    try:
        produce(client, 0, b"v")
        return [Fetcher(client, v).fetch(0, 0, {0: 0, 1: 0}) for v in (4, 5, 6)]
    finally:
        client.close()


async def test_fetches_before_v7_have_no_session() -> None:
    async with gateway_with_hot_topic(2) as (gateway, _):
        answers = await asyncio.to_thread(old_versions, gateway.kafka_port)
        assert gateway.running.services.fetch_sessions.sessions == 0
    for resp in answers:
        assert set(named(resp)) == {0, 1} and named(resp)[0][0] > 0


def _once(port: int, **fields: Any) -> Any:
    client = RawClient(port)
    try:
        produce(client, 0, b"v")
        return Fetcher(client, 12).fetch(**fields)
    finally:
        client.close()


async def test_no_session_without_slots() -> None:
    async with gateway_with_hot_topic(2, max_incremental_fetch_session_cache_slots=0) as (g, _):
        resp = await asyncio.to_thread(_once, g.kafka_port, session_id=0, epoch=0, named={0: 0})
    assert (resp.error_code, resp.session_id) == (ErrorCode.none, 0)
    assert named(resp)[0][0] > 0


async def test_a_partition_named_twice_is_answered_once() -> None:
    async with gateway_with_hot_topic(2) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        try:
            fields = RawClient.fetch_fields("hot", 0)
            m = importlib.import_module("kio.schema.fetch.v12.request")
            parts = tuple(
                m.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                for p in (1, 0, 1)
            )
            fields["topics"] = (m.FetchTopic(topic="hot", partitions=parts),)
            resp = await asyncio.to_thread(client.request, 1, 12, **fields)
        finally:
            client.close()
    assert resp.error_code == ErrorCode.none
    assert [p.partition_index for t in resp.responses for p in t.partitions] == [1, 0]


def fuzz_seeds_answered(port: int) -> list[int]:
    import random

    from fuzz.seeds import Names, session_seeds

    client = RawClient(port)
    try:
        codes = []
        for seed in session_seeds(random.Random(5), Names(topics=("hot",))):
            client.send_frame(seed.frame)
            correlation = int.from_bytes(seed.frame[4:8], "big")
            codes.append(
                client.decode(1, seed.version, correlation, client.recv_frame()).error_code
            )
        return codes
    finally:
        client.close()


async def test_the_fuzzers_session_seeds_reach_the_session_cache() -> None:
    """fuzz/seeds.py's session-shaped Fetch frames are read and answered (so the live
    fuzzer's mutants of them reach the cache), each by its session's rule."""
    async with gateway_with_hot_topic(2) as (gateway, _):
        codes = await asyncio.to_thread(fuzz_seeds_answered, gateway.kafka_port)
    assert len(codes) == 4 * len(SESSION_VERSIONS)
    assert set(codes[0::4]) == {ErrorCode.none}  # opening
    assert set(codes[1::4]) == {ErrorCode.fetch_session_id_not_found}  # a guessed id
    assert set(codes[3::4]) == {ErrorCode.none}  # closing
