"""The Pulsar writers' shared send budget: a writer waits for room instead of
blocking the event loop in the C++ client (block_if_queue_full is off), and a
send that does not fit is refused whole, never half-enqueued."""

from __future__ import annotations

import asyncio

from kop.pulsar.client import SendBudget


async def test_waiting_for_room_resumes_when_acknowledgements_free_it() -> None:
    budget = SendBudget(100)
    budget.take(80)
    assert not budget.fits(30)
    waiter = asyncio.ensure_future(budget.wait_for(30))
    await asyncio.sleep(0)
    assert not waiter.done()
    budget.give(50)
    await asyncio.wait_for(waiter, 1)
    assert budget.fits(30)


async def test_an_oversized_send_still_goes_alone_rather_than_never() -> None:
    budget = SendBudget(100)
    assert budget.fits(500)  # nothing in flight: one large batch may go
    budget.take(500)
    assert not budget.fits(1)
    budget.give(500)
    assert budget.used == 0 and budget.fits(1)
