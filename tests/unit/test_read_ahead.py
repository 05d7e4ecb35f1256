"""Reader read-ahead is bounded in bytes, in total across readers (issue 19, 4).

Pulsar's FLOW permits count messages: with a thousand permits per reader, a reader
of 1 MiB entries held up to a gigabyte that nobody had asked for yet. Readers now
share one byte budget: they grant permits only while it has room, and one with
nothing queued can always fetch one entry, so none starves.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest

from kop.ops.metrics import Metrics
from kop.pulsar.client import SendBudget
from kop.pulsar.wire.read_ahead import FRAME_OVERHEAD, ReadAhead, ReadAheadBudget
from tests.unit.scripted_pulsar import Broker, entry, open_reader, settle

MiB = 1 << 20


def _topic(n: int, size: int) -> Broker:
    return Broker(entries=[entry(bytes([i % 256]) * size) for i in range(n)])


async def test_a_reader_of_large_entries_holds_what_the_budget_allows() -> None:
    broker = _topic(200, MiB)
    budget = ReadAheadBudget(8 * MiB)
    reader = await open_reader(broker, budget=budget)
    await settle(broker)  # a consumer that does not read (yet)
    one = MiB + FRAME_OVERHEAD
    assert broker.sent_bytes <= 8 * MiB + MiB  # was 200 MiB: every entry it had
    assert budget.held <= budget.limit + one
    for i in range(200):
        raw = await reader.read()  # and everything still arrives, in order
        assert raw.entry == i and raw.payload[:1] == bytes([i % 256])
        assert budget.held <= budget.limit + one
    assert budget.peak_held <= budget.limit + one
    await reader.close()
    assert (budget.held, budget.reserved) == (0, 0)


async def test_readers_share_the_budget_and_none_starves() -> None:
    brokers = [_topic(40, MiB) for _ in range(10)]
    budget = ReadAheadBudget(4 * MiB)
    readers = [await open_reader(b, budget=budget) for b in brokers]
    await settle(*brokers)
    # In total: the limit, plus at most one entry for each reader that had none.
    assert budget.peak_held <= budget.limit + len(readers) * (MiB + FRAME_OVERHEAD)
    assert sum(b.sent_bytes for b in brokers) < 15 * MiB  # was 400 MiB

    async def drain(i: int) -> list[int]:
        return [(await readers[i].read()).entry for _ in range(40)]

    got = await asyncio.gather(*(drain(i) for i in range(10)))
    assert got == [list(range(40))] * 10
    assert budget.peak_held <= budget.limit + len(readers) * (MiB + FRAME_OVERHEAD)
    for r in readers:
        await r.close()
    assert (budget.held, budget.reserved) == (0, 0)


async def test_small_entries_still_fill_the_receiver_queue() -> None:
    """The byte bound must not cost throughput where it is not needed."""
    broker = _topic(3000, 100)
    reader = await open_reader(broker, budget=ReadAheadBudget(64 * MiB), receiver_queue=1000)
    await settle(broker)
    assert broker._cursor == 1000  # a probe, then the rest of the queue
    for i in range(3000):
        assert (await reader.read()).entry == i
    assert max(broker.flows) >= 500  # in halves of the queue, not one FLOW per entry
    assert len(broker.flows) < 20
    await reader.close()


async def test_a_full_budget_still_gives_an_empty_reader_one_entry() -> None:
    budget = ReadAheadBudget(MiB)
    budget.held = 10 * MiB  # others hold more than all of it
    broker = _topic(3, 2 * MiB)
    reader = await open_reader(broker, budget=budget)
    for i in range(3):
        assert (await reader.read()).entry == i
    await reader.close()
    assert budget.held == 10 * MiB


async def test_permits_lost_with_a_subscription_are_granted_again() -> None:
    """After the broker drops the consumer (an unload), the new one gets permits
    and the budget does not keep reserving for the old one's."""
    broker = _topic(50, MiB)
    budget = ReadAheadBudget(4 * MiB)
    reader = await open_reader(broker, budget=budget)
    await settle(broker)
    for i in range(3):
        assert (await reader.read()).entry == i
    broker.drop_consumer()
    for i in range(3, 50):
        assert (await asyncio.wait_for(reader.read(), 5)).entry == i
    assert [s[1] for s in broker.subscribes][1] is not None  # resumed where it was
    await reader.close()
    assert (budget.held, budget.reserved) == (0, 0)


def test_the_estimate_follows_sizes_up_at_once_and_down_slowly() -> None:
    budget = ReadAheadBudget(10 * MiB)
    flow = ReadAhead(budget, 1000)
    assert flow.grant(0) == 1  # nothing known: a probe
    flow.arrived(1, MiB)
    flow.release(MiB)
    assert flow.grant(0) == 1  # a reader's share is an eighth: 1.25 MiB, one entry
    for _ in range(10):
        flow.arrived(1, 1024)
        flow.release(1024)
    assert 0 < flow.grant(0) < 40  # after a few small ones, still cautious


async def test_both_pulsar_budgets_are_metrics() -> None:
    metrics, ahead, sends = Metrics(), ReadAheadBudget(8 * MiB), SendBudget(4 * MiB)
    ahead.held, sends.used = 3 * MiB, MiB
    metrics.watch_pulsar_memory(ahead, sends)
    text = generate_latest(metrics.registry).decode()
    values = {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("kop_pulsar_")
    }
    assert values["kop_pulsar_read_ahead_bytes"] == 3 * MiB
    assert values["kop_pulsar_read_ahead_limit_bytes"] == 8 * MiB
    assert values["kop_pulsar_send_bytes"] == MiB
    assert values["kop_pulsar_send_limit_bytes"] == 4 * MiB


async def test_batches_larger_than_the_permits_left_do_not_stall_the_reader() -> None:
    """A batch entry uses its message count of permits, also past zero: a broker
    that sent 300 messages on the last permit holds -299, and dispatches again only
    once FLOWs bring it above zero. A reader that forgot the deficit granted one
    permit at a time and waited forever (a Spark job after a kop restart: no record
    for 120 s)."""
    batches = [entry(b"x" * 4000, num_messages_in_batch=300) for _ in range(12)]
    broker = Broker(entries=batches)
    reader = await open_reader(broker, receiver_queue=100, budget=ReadAheadBudget(64 * MiB))
    async with asyncio.timeout(10):
        got = [(await reader.read()).entry for _ in range(12)]
    assert got == list(range(12))
    await reader.close()


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.tuples(st.integers(1, 500), st.integers(1, 64 * 1024)), min_size=1, max_size=25
    ),
    receiver_queue=st.integers(1, 300),
    limit=st.integers(64 * 1024, 4 * MiB),
)
def test_any_mix_of_batches_queue_and_budget_reads_to_the_end(
    batches: list[tuple[int, int]], receiver_queue: int, limit: int
) -> None:
    """Whatever the batches weigh and count against the queue and the budget, every
    entry arrives, in order, and the budget is whole again after."""

    async def run() -> None:
        broker = Broker(
            entries=[entry(b"y" * size, num_messages_in_batch=n) for n, size in batches]
        )
        budget = ReadAheadBudget(limit)
        reader = await open_reader(broker, receiver_queue=receiver_queue, budget=budget)
        async with asyncio.timeout(10):
            got = [(await reader.read()).entry for _ in batches]
        assert got == list(range(len(batches)))
        await reader.close()
        assert (budget.held, budget.reserved) == (0, 0)

    with ThreadPoolExecutor(1) as pool:  # a loop of its own, off the test's
        pool.submit(asyncio.run, run()).result()


def test_a_caught_up_reader_of_large_entries_leaves_the_others_room() -> None:
    """A reader of 256 KiB entries waiting at the end of its topic reserved the whole
    budget for permits it might never use; the reader actually being read then got
    one entry per round trip (the consume bench fell to half). A reader's share is
    now capped."""
    budget = ReadAheadBudget(64 * MiB)
    tail = ReadAhead(budget, receiver_queue=1000)
    assert tail.grant(0) == 1  # the probe
    tail.arrived(1, 256 * 1024)
    tail.release(256 * 1024)
    tail.grant(0)  # caught up: permits out, nothing arriving
    assert budget.reserved <= budget.limit // 8
    history = ReadAhead(budget, receiver_queue=1000)
    assert history.grant(0) == 1
    history.arrived(1, 1366)
    history.release(1366)
    assert history.grant(0) >= 900  # was 1: the tail reader held every byte
