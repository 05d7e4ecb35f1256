"""The server's operating limits, end to end through sockets, with the whole
gateway over the in-memory storage (so one partition's writer can be stalled on
command, which a live Pulsar cannot be made to do): a stalled partition never
slows other connections or the admin endpoint, and a connection that goes away,
or whose writes fail, leaves no task, waiter or socket behind."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
import urllib.request
from collections.abc import AsyncIterator, Mapping
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from fuzz import corpus
from kop.api.context import Services
from kop.protocol.records import Record, build_batch, iter_records, split_batches
from kop.quotas.book import QuotaBook
from kop.quotas.throttles import Throttles
from kop.server.connection import Connection, Limits
from kop.server.stream import RequestStream
from kop.storage.naming import Namespace
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port, gateway_with_hot_topic, until
from tests.sim.memory_admin import MemoryBackend, MemoryRecords

BOUND_S = 0.1  # what "still answers" means: well under any client's patience


@pytest.fixture
async def running() -> AsyncIterator[tuple[Gateway, MemoryBackend]]:
    async with gateway_with_hot_topic(
        2, admin_host="127.0.0.1", admin_port=free_port(), write_timeout_s=5
    ) as running:
        yield running


def _produce(topic: str, partition: int, value: bytes) -> dict[str, Any]:
    batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
    data = PartitionProduceData(index=partition, records=batch)
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout": datetime.timedelta(seconds=30),
        "topic_data": (TopicProduceData(name=topic, partition_data=(data,)),),
    }


async def _timed(call: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.monotonic()
    result = await asyncio.to_thread(call, *args, **kwargs)
    return time.monotonic() - started, result


async def test_a_stalled_partition_slows_no_other_connection(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    gateway, backend = running
    stalled = RawClient(gateway.kafka_port)
    other = RawClient(gateway.kafka_port)
    first = await asyncio.to_thread(stalled.request, 0, 9, **_produce("hot", 0, b"first"))
    assert first.responses[0].partition_responses[0].error_code == 0
    # Each timed request once beforehand: the first of a kind in a process loads its
    # schemas (0.3 s for Metadata v12), which is not what the bounds below are about.
    await asyncio.to_thread(other.request, 18, 3, client_software_name="t",
                            client_software_version="1")  # fmt: skip
    await asyncio.to_thread(other.request, 3, 12, topics=None, allow_auto_topic_creation=False,
                            include_topic_authorized_operations=False)  # fmt: skip
    await asyncio.to_thread(other.request, 0, 9, **_produce("hot", 1, b"warm"))
    backend.log.writers["persistent://public/default/hot-partition-0"].stall()
    for i in range(20):  # pipelined behind the stalled writer, never answered in time
        _, frame = stalled.encode(0, 9, **_produce("hot", 0, f"stuck-{i}".encode()))
        await asyncio.to_thread(stalled.send_frame, frame)
    await asyncio.sleep(0.2)

    took, versions = await _timed(other.request, 18, 3, client_software_name="t",
                                  client_software_version="1")  # fmt: skip
    assert versions.error_code == 0 and took < BOUND_S, took
    took, meta = await _timed(other.request, 3, 12, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)  # fmt: skip
    assert any(t.name == "hot" for t in meta.topics) and took < BOUND_S, took
    took, produced = await _timed(other.request, 0, 9, **_produce("hot", 1, b"elsewhere"))
    assert produced.responses[0].partition_responses[0].error_code == 0
    assert took < BOUND_S, took
    url = f"http://127.0.0.1:{gateway.config.admin_port}/healthz"
    took, status = await _timed(lambda: urllib.request.urlopen(url, timeout=5).status)
    assert status == 200 and took < BOUND_S, took
    stalled.close()
    other.close()


async def test_a_client_gone_with_pipelined_requests_leaves_nothing_behind(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    gateway, _backend = running
    warm = RawClient(gateway.kafka_port)
    opening = RawClient.fetch_fields("hot", 0, partition=1)
    await asyncio.to_thread(warm.request, 1, 12, **opening)  # opens the partition
    warm.close()
    await until(lambda: gateway.metrics.connections._value.get() == 0, 5)
    baseline = len(asyncio.all_tasks())
    client = RawClient(gateway.kafka_port)
    long_poll = RawClient.fetch_fields("hot", 0, partition=1, wait_ms=20_000)
    for _ in range(30):  # long polls that would each wait 20 s for data
        _, frame = client.encode(1, 12, **long_poll)
        await asyncio.to_thread(client.send_frame, frame)
    await until(lambda: gateway.metrics.connections._value.get() == 1, 5)
    await asyncio.sleep(0.2)
    client.sock.close()
    await until(lambda: gateway.metrics.connections._value.get() == 0, 5)
    await until(lambda: len(asyncio.all_tasks()) <= baseline, 5)
    plog = gateway.logs.owned()["persistent://public/default/hot-partition-1"]
    assert not [w for w in plog.follower.wakeups.waiting if not w.done()]


class _FailingWriter:
    """A socket whose writes fail (the peer reset it) while reads stay open."""

    def __init__(self) -> None:
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1)

    def write(self, data: bytes) -> None:
        return None

    async def drain(self) -> None:
        raise ConnectionResetError("peer reset")

    def unsent(self) -> int:
        return 0

    async def writable(self) -> None:
        return None

    def abort(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None


# What a connection answering only ApiVersions reads of the services: quotas, none set.
_NO_SERVICES = cast(Services, SimpleNamespace(quotas=QuotaBook(MemoryRecords[str](), Throttles())))


class _Observer:
    def __init__(self) -> None:
        self.open = 0

    def request_done(
        self, api_key: int, seconds: float, ok: bool, errors: Mapping[int, int]
    ) -> None:
        return None

    def connection_change(self, delta: int) -> None:
        self.open += delta

    def throttled(self, quota: str, seconds: float) -> None:
        return None

    def connection_closed(self, reason: str) -> None:
        return None


async def test_a_failed_write_ends_the_connection_without_waiting_for_the_reader() -> None:
    reader = RequestStream(1 << 20, 1 << 20)
    writer = _FailingWriter()
    observer = _Observer()
    conn = Connection(
        reader, writer, _NO_SERVICES, Namespace("public", "default"),
        Limits(1 << 20, 8, idle_timeout_s=600), observer,
    )  # fmt: skip
    _, frame = RawClient.__new__(RawClient).encode_standalone(
        18, 3, client_software_name="t", client_software_version="1"
    )
    data = len(frame).to_bytes(4, "big") + frame
    reader.get_buffer(-1)[: len(data)] = data
    reader.buffer_updated(len(data))  # the stream stays open
    await asyncio.wait_for(conn.run(), 5)  # not the 600 s idle timeout
    assert writer.closed and observer.open == 0


async def test_deleting_a_topic_first_lets_go_of_its_partitions(
    running: tuple[Gateway, MemoryBackend],
) -> None:
    """Pulsar cuts off the clients of a deleted topic and they retry against a topic
    that is gone: kop closes its own readers and writers before it deletes."""
    gateway, backend = running
    client = RawClient(gateway.kafka_port)
    for partition in (0, 1):
        produced = await asyncio.to_thread(client.request, 0, 9, **_produce("hot", partition, b"v"))
        assert produced.responses[0].partition_responses[0].error_code == 0
    assert backend.log.writers  # both partitions are open: a writer and a tail reader each
    deleted = await asyncio.to_thread(client.request, 20, 4, topic_names=["hot"],
                                    timeout=datetime.timedelta(seconds=30))  # fmt: skip
    assert deleted.responses[0].error_code == 0
    assert "persistent://public/default/hot" not in backend.admin.topics
    assert backend.admin.held_at_delete == []
    client.close()


async def test_shutdown_past_the_grace_period_is_quiet(
    running: tuple[Gateway, MemoryBackend], caplog: pytest.LogCaptureFixture
) -> None:
    """A connection whose request is stuck past the shutdown grace is closed, and
    that is all: no asyncio error about the cancelled connection task."""
    gateway, backend = running
    client = RawClient(gateway.kafka_port)
    first = await asyncio.to_thread(client.request, 0, 9, **_produce("hot", 0, b"first"))
    assert first.responses[0].partition_responses[0].error_code == 0
    backend.log.writers["persistent://public/default/hot-partition-0"].stall()
    _, frame = client.encode(0, 9, **_produce("hot", 0, b"stuck"))
    await asyncio.to_thread(client.send_frame, frame)
    await until(lambda: gateway.metrics.connections._value.get() == 1, 5)
    with caplog.at_level(logging.ERROR):
        await gateway.listener.stop(grace_s=0.2)
        await asyncio.sleep(0.05)  # the server's done-callback runs on the next turn
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert await asyncio.to_thread(client.wait_closed_by_peer, 5)
    client.close()


class _UnreadWriter(_FailingWriter):
    """A client that reads no answer: after the first, answers back up for good."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0
        self.backed_up = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.written += 1
        self.backed_up.set()

    async def drain(self) -> None:
        await asyncio.Event().wait()  # never: the send timeout is the stream's job

    async def writable(self) -> None:
        if self.backed_up.is_set():
            await asyncio.Event().wait()


class _CountingSource:
    """Endless ApiVersions requests, counting how many the connection took."""

    def __init__(self, frame: bytes) -> None:
        self._frame = frame
        self.taken = 0

    async def next_frame(self) -> bytes:
        self.taken += 1
        await asyncio.sleep(0)
        return self._frame

    def frame_done(self) -> None:
        return None

    @property
    def ended_inside_prefix(self) -> bool:
        return False

    def feed_eof(self) -> None:
        return None


async def test_no_request_is_handled_while_answers_are_left_unread() -> None:
    _, frame = RawClient.__new__(RawClient).encode_standalone(
        18, 3, client_software_name="t", client_software_version="1"
    )
    source, writer = _CountingSource(frame), _UnreadWriter()
    conn = Connection(
        source, writer, _NO_SERVICES, Namespace("public", "default"),
        Limits(1 << 20, 32, idle_timeout_s=600), _Observer(),
    )  # fmt: skip
    running = asyncio.create_task(conn.run())
    await until(lambda: writer.written == 1, 5)
    for _ in range(50):  # the loop turns in which more requests could be handled
        await asyncio.sleep(0)
    assert writer.written == 1
    assert source.taken <= 3  # not 32 more answers made to wait in memory
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running


async def test_a_flood_of_invalid_requests_writes_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The fuzzer's garbage once wrote a WARNING per frame: a client sending invalid
    # requests wrote kop's log at its own pace. They are answered, and logged like
    # closes: once per reason every 10 s, counting the rest.
    wire = next(w for n, w in corpus.load() if n.startswith("abort-JoinGroupRequestv7"))
    async with gateway_with_hot_topic(1) as (gateway, _backend):
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.config.port)
        with caplog.at_level(logging.WARNING, logger="kop.server.connection"):
            writer.write(wire * 200)
            for _ in range(200):  # each answered INVALID_REQUEST, the connection kept
                size = int.from_bytes(await reader.readexactly(4), "big")
                await reader.readexactly(size)
        writer.close()
    lines = [r for r in caplog.records if "invalid request" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in lines[:5]]


async def test_a_produce_is_answered_within_its_timeout_and_its_retry_finds_the_write() -> None:
    """A write Pulsar has not stored when the request's timeout runs out is answered
    REQUEST_TIMED_OUT then (the client's own request timeout is the same: a later
    answer would find its connection closed), and goes on; the idempotent retry gets
    the offset it was stored at, and the log holds it once."""
    async with gateway_with_hot_topic(1, write_timeout_s=600) as (gateway, backend):
        client = RawClient(gateway.kafka_port, timeout=20)
        batch = build_batch([Record(0, 1_700_000_000_000, None, b"v")],
                            producer_id=7, producer_epoch=0, base_sequence=0)  # fmt: skip
        warm = await asyncio.to_thread(client.request, 0, 9, **_produce("hot", 0, b"warm"))
        assert warm.responses[0].partition_responses[0].error_code == 0
        writer = backend.log.writers["persistent://public/default/hot-partition-0"]
        writer.stall()
        fields = {**_produce("hot", 0, b""), "timeout": datetime.timedelta(seconds=1)}
        fields["topic_data"] = (
            TopicProduceData(
                name="hot", partition_data=(PartitionProduceData(index=0, records=batch),)
            ),
        )
        first = await asyncio.to_thread(client.request, 0, 9, **fields)
        assert first.responses[0].partition_responses[0].error_code == 7  # REQUEST_TIMED_OUT
        writer.unstall()
        again = await asyncio.to_thread(client.request, 0, 9, **fields)
        part = again.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (0, 1)
        read = await asyncio.to_thread(client.request, 1, 12, **RawClient.fetch_fields("hot", 0))
        records = read.responses[0].partitions[0].records
        assert records is not None
        values = [
            r.value
            for _, data in split_batches(records, max_batch_bytes=1 << 20)
            for r in iter_records(data)
        ]
        assert values == [b"warm", b"v"]
        client.close()
