"""The storage port's writer modes on a real Pulsar, through kop's own client: two
`PulsarSession`s stand for two kop instances. E1/E2 of
docs/design/several-instances.md repeated: a fencing writer takes the topic from
the other session's (epochs 0 then 1; what the fenced one had acknowledged lies
before the fencer's first entry, everything else of it fails WriterFenced); an
exclusive writer is refused WriterBusy while another holds the topic; a named writer
continues its name's sequence ids in another session; an unload keeps the fence (F4).

The fencers here have names of their own: taking over a name whose holder still has
writes in flight can deadlock a Pulsar 4.0.7 broker (docs/decisions.md D14)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pulsar
import pytest

from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession, PulsarWriter
from kop.storage.types import (
    IDLE,
    OutgoingEntry,
    OutgoingMessage,
    StoredEntry,
    WriterBusy,
    WriterFenced,
    WriterMode,
)
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL
from tests.integration.observe import dedup_namespace, pulsar_rest

FENCING, EXCLUSIVE, SHARED = WriterMode.FENCING, WriterMode.EXCLUSIVE, WriterMode.SHARED
FENCING_SHARED = WriterMode.FENCING_SHARED


@pytest.fixture(scope="module")
def namespace(pulsar: str) -> Iterator[str]:
    with dedup_namespace("fence") as ns:
        yield ns


@pytest.fixture
def topic(namespace: str) -> str:
    local = f"f-{uuid.uuid4().hex[:12]}"
    pulsar_rest("PUT", f"persistent/{namespace}/{local}")
    return f"persistent://{namespace}/{local}"


@pytest.fixture
async def sessions(pulsar: str) -> AsyncIterator[list[PulsarSession]]:
    """Three sessions, each with its own connections: three kop instances."""
    admin = PulsarAdmin(PULSAR_HTTP)
    made = [PulsarSession(PULSAR_URL, admin, operation_timeout_s=10.0) for _ in range(3)]
    yield made
    for session in made:
        await session.close()
    await admin.close()


def entry(value: bytes) -> OutgoingEntry:
    return OutgoingEntry.of(OutgoingMessage(value, {}, None, None))


async def write(writer: PulsarWriter, value: bytes) -> StoredEntry:
    _, done = writer.send_all([entry(value)])
    stored = (await asyncio.wait_for(done, 30))[0]
    assert stored is not None
    return stored


def epoch_property(topic: str) -> str | None:
    """The topic epoch as Pulsar keeps it, a managed-ledger property (F4)."""
    props = pulsar_rest("GET", f"persistent/{topic.removeprefix('persistent://')}/properties")
    return dict(props).get("pulsar.topic.epoch")


async def read_all(session: PulsarSession, topic: str) -> list[StoredEntry]:
    reader = await session.reader(topic, None)
    out: list[StoredEntry] = []
    try:
        while True:
            reader.report_idle()
            got = await asyncio.wait_for(reader.read(), 30)
            if got is IDLE:
                return out
            assert isinstance(got, StoredEntry)
            out.append(got)
    finally:
        await reader.close()


def payload(stored: StoredEntry) -> bytes:
    assert stored.message is not None
    return stored.message.payload


async def test_a_fencing_writer_takes_the_topic_from_another_instance(
    sessions: list[PulsarSession], topic: str
) -> None:
    """E1/E2: 20,000 single-entry writes, another instance's fencing writer arriving
    after the 5,000th. Each of them is acknowledged or fails WriterFenced; the
    acknowledged ones are a prefix and all precede the fencer's first entry; every
    later write of the fenced writer fails WriterFenced."""
    one, two = sessions[0], sessions[1]
    old = await one.writer(topic, mode=FENCING, name="kop-a")
    assert (old.epoch, epoch_property(topic)) == (0, "0")
    await write(old, b"a-first")
    sent = []
    for i in range(20_000):
        sent.append(old.send_all([entry(b"a-%d" % i)])[1])
        if i == 5_000:  # meanwhile the first ones go out
            started = time.monotonic()
            new = await two.writer(topic, mode=FENCING, name="kop-b")
            took = time.monotonic() - started
    assert (new.epoch, epoch_property(topic)) == (1, "1")
    first = await write(new, b"b-first")
    results = await asyncio.gather(*sent, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(r, WriterFenced) for r in failures), {repr(r) for r in failures}
    acked = [i for i, r in enumerate(results) if not isinstance(r, BaseException)]
    assert acked == list(range(len(acked))), "acknowledged writes are a prefix"
    for i in acked:
        stored = results[i][0]  # type: ignore[index]
        assert stored is None or stored.position < first.position
    with pytest.raises(WriterFenced):
        await write(old, b"a-late")
    await write(new, b"b-second")  # after its one disturbance by the old one's try
    log = [payload(e) for e in await read_all(two, topic)]
    at = log.index(b"b-first")
    assert all(v.startswith(b"a-") for v in log[:at])
    assert log[at:] == [b"b-first", b"b-second"]
    theirs = [v for v in log if v != b"a-first" and v.startswith(b"a-")]
    assert theirs == [b"a-%d" % i for i in range(len(theirs))] and len(theirs) >= len(acked)
    print(f"fencer attached in {took * 1000:.0f} ms; {len(acked)} of 20000 acknowledged, "
          f"{len(theirs)} stored")  # fmt: skip


async def test_an_exclusive_writer_is_refused_while_the_topic_is_held(
    sessions: list[PulsarSession], topic: str
) -> None:
    one, two, three = sessions
    holder = await one.writer(topic, mode=EXCLUSIVE)
    assert holder.epoch == 0
    started = time.monotonic()
    with pytest.raises(WriterBusy):
        await two.writer(topic, mode=EXCLUSIVE)
    with pytest.raises(WriterBusy):
        await three.writer(topic)  # shared
    assert time.monotonic() - started < 5, "refused at once, not retried"
    await write(holder, b"x")
    await one.close_writer(topic)
    again = await two.writer(topic, mode=EXCLUSIVE)
    assert again.epoch == 1
    await write(again, b"y")


async def test_a_named_writer_continues_its_names_sequence_in_another_instance(
    sessions: list[PulsarSession], topic: str
) -> None:
    """F6: the second instance's writer under the same name starts after the first's
    last sequence id, so deduplication carries over; the first, idle, is fenced."""
    one, two = sessions[0], sessions[1]
    first = await one.writer(topic, mode=FENCING, name="kop-p0")
    assert first.resumed_after == -1
    for i in range(5):
        await write(first, b"a%d" % i)
    second = await two.writer(topic, mode=FENCING, name="kop-p0")
    assert (second.resumed_after, second.epoch) == (4, 1)
    stored = await write(second, b"b0")
    assert (stored.producer_name, stored.sequence_id) == ("kop-p0", 5)
    with pytest.raises(WriterFenced):
        await write(first, b"a5")
    log = await read_all(two, topic)
    assert [(e.producer_name, e.sequence_id) for e in log] == [("kop-p0", i) for i in range(6)]


async def test_an_unload_keeps_the_fence(sessions: list[PulsarSession], topic: str) -> None:
    """F4: the holder comes back after an unload with its epoch and goes on writing;
    the epoch stays; the writer it fenced before stays fenced."""
    one, two = sessions[0], sessions[1]
    stale = await one.writer(topic, mode=FENCING)
    holder = await two.writer(topic, mode=FENCING)
    await write(holder, b"before")
    pulsar_rest("PUT", f"persistent/{topic.removeprefix('persistent://')}/unload")
    await write(holder, b"after")
    assert (holder.epoch, epoch_property(topic)) == (1, "1")
    with pytest.raises(WriterFenced):
        await write(stale, b"stale")
    await write(holder, b"again")
    assert holder.epoch == 1
    assert [payload(e) for e in await read_all(two, topic)] == [b"before", b"after", b"again"]


async def test_a_shared_writer_is_fenced_by_a_fencing_one(
    sessions: list[PulsarSession], topic: str
) -> None:
    one, two = sessions[0], sessions[1]
    shared = await one.writer(topic, mode=SHARED)
    assert shared.epoch == -1
    await write(shared, b"shared")
    fencer = await two.writer(topic, mode=FENCING)
    assert fencer.epoch == 0
    with pytest.raises(WriterFenced):
        await write(shared, b"late")
    await write(fencer, b"fencer")
    assert [payload(e) for e in await read_all(two, topic)] == [b"shared", b"fencer"]


async def test_a_fencing_shared_writer_keeps_the_fence_and_pulsar_producers(
    sessions: list[PulsarSession], topic: str
) -> None:
    """D21 on Pulsar 4.0.7: kop fences, then writes Shared at the fence's epoch. A
    Pulsar application's producer writes beside it; another instance's takeover
    closes both; the old holder comes back (the broker lets a Shared producer in),
    finds the topic at a newer epoch and fails for good; the application's producer
    comes back by itself and goes on."""
    one, two = sessions[0], sessions[1]
    old = await one.writer(topic, mode=FENCING_SHARED, name="kop-a")
    assert old.epoch == 0
    await write(old, b"a0")
    client = pulsar.Client(PULSAR_URL)
    try:
        app = client.create_producer(topic, send_timeout_millis=30000)
        await asyncio.to_thread(app.send, b"p0")
        new = await two.writer(topic, mode=FENCING_SHARED, name="kop-b")
        assert new.epoch == 1 and epoch_property(topic) == "1"
        with pytest.raises(WriterFenced):
            await write(old, b"a-late")
        await write(new, b"b0")
        await asyncio.to_thread(app.send, b"p1")
    finally:
        client.close()
    assert [payload(e) for e in await read_all(two, topic)] == [b"a0", b"p0", b"b0", b"p1"]


def publishers(topic: str) -> list[str]:
    stats = pulsar_rest("GET", f"persistent/{topic.removeprefix('persistent://')}/stats")
    return sorted(p["producerName"] for p in stats["publishers"])


async def test_a_writer_handed_over_stays_until_the_next_owners_fence(
    sessions: list[PulsarSession], topic: str
) -> None:
    """D28: a writer let go for another instance sends no CloseProducer (beside the next
    owner's fence it deadlocked the broker): what it sent is stored, the broker keeps it
    until the next owner fences, and the instance that let go can take the topic again."""
    one, two = sessions[0], sessions[1]
    old = await one.writer(topic, mode=FENCING, name="kop-a")
    await write(old, b"a")
    await one.hand_over_writer(topic)
    assert publishers(topic) == ["kop-a"]
    with pytest.raises(WriterBusy):  # still held: only a fence takes it
        await two.writer(topic, mode=EXCLUSIVE)
    new = await two.writer(topic, mode=FENCING, name="kop-b")
    await write(new, b"b")
    assert publishers(topic) == ["kop-b"]
    back = await one.writer(topic, mode=FENCING, name="kop-a2")
    await write(back, b"c")
    assert [payload(e) for e in await read_all(one, topic)] == [b"a", b"b", b"c"]
