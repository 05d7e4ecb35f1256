"""The request memory all connections share: first come first served, one frame
at a time past the limit, never more than one frame past it, and no deadlock
however many connections' frames compete for it (as long as each connection
takes its whole frames); and the answer budget's claims."""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kop.server.memory import EVICT_IDLE_S, AnswerMemory, RequestMemory
from kop.server.stream import RequestStream


class _Wakes:
    def __init__(self) -> None:
        self.woken: list[str] = []

    def __call__(self, owner: _Owner) -> Any:
        return lambda: self.woken.append(owner.name)


class _Owner:
    """A connection holding request memory: idle since `idle`, evicted on command."""

    def __init__(self, name: str, idle: float | None = None) -> None:
        self.name = name
        self.idle = time.monotonic() if idle is None else idle
        self.evicted = False

    def idle_since(self) -> float:
        return self.idle

    def evict(self) -> None:
        self.evicted = True


def test_waiters_are_served_in_order_and_one_frame_at_a_time_overdraws() -> None:
    memory, wakes = RequestMemory(100), _Wakes()
    a, b, c, d = (_Owner(n) for n in "abcd")
    assert memory.take(a, 80, wakes(a))
    assert memory.take(b, 50, wakes(b))  # within the limit before: b's frame overdraws
    assert memory.used == 130
    assert memory.take(b, 30, wakes(b))  # b finishes its frame past the limit
    assert not memory.take(c, 10, wakes(c))  # over the limit, an overdraft under way
    assert not memory.take(d, 1, wakes(d))  # behind c, though it would fit later
    memory.finished(b)  # b's frame is whole; still over the limit: nobody new overdraws
    assert wakes.woken == []
    memory.release(80)  # a's frame dispatched: 80 used
    assert wakes.woken == ["c", "d"] and memory.used == 91
    memory.release(80)  # b's
    assert memory.used == 11 and memory.waiting == 0


def test_a_gone_waiter_is_forgotten_and_its_overdraft_ends() -> None:
    memory, wakes = RequestMemory(100), _Wakes()
    a, b, c = (_Owner(n) for n in "abc")
    assert memory.take(a, 150, wakes(a))  # overdraft
    assert not memory.take(b, 10, wakes(b))
    assert not memory.take(c, 10, wakes(c))
    memory.forget(b)
    memory.release(150)
    memory.forget(a)
    assert wakes.woken == ["c"] and memory.used == 10


def test_while_anyone_waits_holders_that_stopped_are_evicted() -> None:
    memory, wakes = RequestMemory(100), _Wakes()
    now = time.monotonic()
    stopped = _Owner("stopped", idle=now - EVICT_IDLE_S - 1)
    moving = _Owner("moving")
    whole = _Owner("whole", idle=now - EVICT_IDLE_S - 1)
    assert memory.take(stopped, 60, wakes(stopped))
    assert memory.take(whole, 30, wakes(whole))
    memory.finished(whole)  # its frame is whole: it waits for nobody but its reader
    assert memory.take(moving, 40, wakes(moving))  # the overdraft: 130 of 100 used
    assert memory.evict_idle() == 0  # nobody waits: nobody is evicted
    waiter = _Owner("waiter", idle=now - EVICT_IDLE_S - 1)
    assert not memory.take(waiter, 30, wakes(waiter))
    assert stopped.evicted and not moving.evicted and not whole.evicted
    assert not waiter.evicted  # waiting on the budget is not its own doing


def test_a_waiter_given_memory_is_not_idle_before_it_could_read() -> None:
    """It waited muted for long; the moment it is granted, another waiter's eviction
    round must not take it for a stopped client (seen in CI: a producer closed right
    after the holders before it were evicted)."""
    memory, wakes = RequestMemory(100), _Wakes()
    holder = _Owner("holder")
    assert memory.take(holder, 150, wakes(holder))  # the overdraft
    long_ago = time.monotonic() - EVICT_IDLE_S - 1
    waiter, later = _Owner("waiter", idle=long_ago), _Owner("later", idle=long_ago)
    assert not memory.take(waiter, 60, wakes(waiter))
    memory.finished(holder)
    memory.release(100)
    assert wakes.woken == ["waiter"]  # 110 of 100 used: the waiter overdraws now
    assert not memory.take(later, 60, wakes(later))  # an eviction round
    assert not waiter.evicted
    # Given memory and still no byte EVICT_IDLE_S later: stopped after all.
    assert memory.holders.evict_idle(time.monotonic() + EVICT_IDLE_S + 1, exempt=[later]) == 1
    assert waiter.evicted


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


SCRATCH = 16 * 1024


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 300_000), min_size=2, max_size=8),
    limit=st.integers(1 << 20 >> 4, 400_000),
    choices=st.lists(st.integers(0, 1 << 16), min_size=1, max_size=64),
)
async def test_competing_frames_never_deadlock_and_stay_within_one_frame_past_the_limit(
    sizes: list[int], limit: int, choices: list[int]
) -> None:
    """Connections each send one frame, receives interleaved and sized by `choices`;
    each takes its frame whenever it is whole (a well-behaved read loop). While work
    is left, some connection can always move, and memory never passes the limit by
    more than the largest frame."""
    memory = RequestMemory(limit)
    streams = [RequestStream(1 << 20, 64 * 1024, memory) for _ in sizes]
    transports = [_Transport() for _ in sizes]
    for stream, transport in zip(streams, transports, strict=True):
        stream.connection_made(transport)
    data = [struct.pack(">i", n) + bytes([i]) * n for i, n in enumerate(sizes)]
    sent = [0] * len(sizes)
    got: dict[int, bytes] = {}
    step = 0
    while len(got) < len(sizes):
        movable = [i for i, t in enumerate(transports) if t.reading and sent[i] < len(data[i])]
        assert movable, f"deadlock: {memory.used} used of {limit}, {memory.waiting} waiting"
        choice = choices[step % len(choices)]
        i = movable[choice % len(movable)]
        buf = streams[i].get_buffer(-1)
        n = min(len(buf), len(data[i]) - sent[i], 1 + choice)
        buf[:n] = data[i][sent[i] : sent[i] + n]
        buf.release()
        streams[i].buffer_updated(n)
        sent[i] += n
        step += 1
        assert memory.used <= limit + max(sizes)
        for j, stream in enumerate(streams):
            if stream._queue:
                frame = await stream.next_frame()
                assert frame is not None
                got[j] = bytes(frame)
                stream.frame_done()
    assert got == {i: bytes([i]) * n for i, n in enumerate(sizes)}
    assert memory.used == 0


def test_an_answer_claim_is_all_or_nothing_below_its_floor() -> None:
    answers = AnswerMemory(10_000)
    assert answers.claim(6_000, floor=1_000) == 6_000
    assert answers.claim(6_000, floor=1_000) == 4_000  # what is left, above the floor
    answers.release(3_500)
    assert answers.claim(6_000, floor=4_000) == 0  # 3,500 free: below the floor
    assert answers.claim(500, floor=4_000) == 500  # asks for less than the floor
    assert answers.used == 7_000
