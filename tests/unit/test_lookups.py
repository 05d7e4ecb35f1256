"""Pulsar admin answers are asked for once per key at a time, at most `concurrency`
at once, and remembered within a bound: a Metadata request naming many topics, or
many clients naming one, cannot turn into as many REST calls to Pulsar."""

from __future__ import annotations

import asyncio

import pytest

from kop.topics.lookups import Lookups


class Admin:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.running = 0
        self.most_running = 0
        self.release = asyncio.Event()
        self.fail: set[str] = set()

    async def fetch(self, key: str) -> str:
        self.calls.append(key)
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(0)  # a REST call takes a turn of the loop at least
            await self.release.wait()
            if key in self.fail:
                raise RuntimeError(f"pulsar said no to {key}")
            return key.upper()
        finally:
            self.running -= 1


async def test_a_thousand_askers_of_one_key_make_one_call() -> None:
    admin = Admin()
    lookups: Lookups[str, str] = Lookups(admin.fetch, ttl_s=60)
    askers = [asyncio.ensure_future(lookups.get("t")) for _ in range(1000)]
    await asyncio.sleep(0)
    admin.release.set()
    assert set(await asyncio.gather(*askers)) == {"T"}
    assert admin.calls == ["t"]
    assert await lookups.get("t") == "T" and admin.calls == ["t"]  # remembered


async def test_many_keys_are_asked_a_few_at_a_time_and_remembered_within_a_bound() -> None:
    admin = Admin()
    lookups: Lookups[str, str] = Lookups(admin.fetch, ttl_s=60, max_entries=100, concurrency=4)
    admin.release.set()
    answers = await asyncio.gather(*(lookups.get(f"t{i}") for i in range(1000)))
    assert answers == [f"T{i}" for i in range(1000)]
    assert admin.most_running == 4
    assert len(lookups) == 100  # the most recent
    await lookups.get("t999")
    await lookups.get("t0")
    assert admin.calls.count("t999") == 1 and admin.calls.count("t0") == 2


async def test_a_failed_answer_is_not_remembered() -> None:
    admin = Admin()
    admin.fail.add("t")
    admin.release.set()
    lookups: Lookups[str, str] = Lookups(admin.fetch, ttl_s=60)
    with pytest.raises(RuntimeError):
        await lookups.get("t")
    admin.fail.clear()
    assert await lookups.get("t") == "T" and admin.calls == ["t", "t"]


async def test_an_asker_that_gives_up_does_not_cancel_the_others() -> None:
    admin = Admin()
    lookups: Lookups[str, str] = Lookups(admin.fetch, ttl_s=60)
    impatient = asyncio.ensure_future(lookups.get("t"))
    patient = asyncio.ensure_future(lookups.get("t"))
    await asyncio.sleep(0)
    impatient.cancel()
    admin.release.set()
    assert await patient == "T"
    assert admin.calls == ["t"]


async def test_forgotten_and_expired_keys_are_asked_again() -> None:
    admin = Admin()
    admin.release.set()
    lookups: Lookups[str, str] = Lookups(admin.fetch, ttl_s=0)
    await lookups.get("t")
    await lookups.get("t")  # expired at once
    forever: Lookups[str, str] = Lookups(admin.fetch, ttl_s=3600)
    await forever.get("u")
    forever.forget("u")
    await forever.get("u")
    assert admin.calls == ["t", "t", "u", "u"]


async def test_a_missing_answer_is_remembered_for_less_time() -> None:
    """A topic another instance creates must not stay unknown here for the full TTL."""
    admin = Admin()
    admin.release.set()
    missing: set[str] = {"t"}

    async def fetch(key: str) -> str | None:
        return None if key in missing else await admin.fetch(key)

    lookups: Lookups[str, str | None] = Lookups(fetch, ttl_s=3600, missing_ttl_s=0)
    assert await lookups.get("t") is None
    missing.clear()  # created elsewhere
    assert await lookups.get("t") == "T"
    assert await lookups.get("t") == "T" and admin.calls == ["t"]  # found: remembered
