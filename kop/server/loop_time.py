"""How long a coroutine held the event loop: the time of each of its steps, not of
its waits. kop serves every client from one loop, so this is what a request cost
the others (Kafka's request time on its handler threads, for `request_percentage`)."""

from __future__ import annotations

from collections.abc import Awaitable, Generator
from time import perf_counter
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Timed(Generic[T]):
    """`await Timed(aw)` is `await aw`, adding its time on the loop to `seconds`."""

    __slots__ = ("_awaitable", "seconds")

    def __init__(self, awaitable: Awaitable[T]) -> None:
        self._awaitable = awaitable
        self.seconds = 0.0

    def __await__(self) -> Generator[Any, Any, T]:
        coro = self._awaitable.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            began = perf_counter()
            try:
                signal = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                self.seconds += perf_counter() - began
                return stop.value  # type: ignore[no-any-return]
            except BaseException:
                self.seconds += perf_counter() - began
                raise
            self.seconds += perf_counter() - began
            try:
                value, error = (yield signal), None
            except BaseException as exc:  # a cancellation, handed to the coroutine
                value, error = None, exc
