"""One connection's side of the client quotas (kop.quotas): what each request cost
is charged to its client, and a client over a quota is throttled as Kafka does
since KIP-219: the answer carries `throttle_time_ms` (well-behaved clients wait
that long before their next request to kop) and the connection's next request is
not read until then (clients that do not wait, wait all the same).

Charged: every handled request's time on the event loop (`request_percentage`), a
Produce request's bytes (`producer_byte_rate`), a Fetch answer's record bytes
(`consumer_byte_rate`). kop's own instances are never throttled."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from kio.static.primitive import i32Timedelta

from kop.protocol.messages import ApiKey
from kop.quotas.entities import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE
from kop.quotas.throttles import Throttles
from kop.security.principal import Principal
from kop.server.ports import RequestObserver

ANONYMOUS = "ANONYMOUS"  # Kafka's name of the user of an unauthenticated connection


class QuotaGate:
    def __init__(self, throttles: Throttles | None, observer: RequestObserver) -> None:
        self._throttles = throttles
        self._observer = observer
        self._who: tuple[str, str] | None = None  # (user, client id); None: not charged
        self._owed = 0.0  # the throttle of the request being dispatched, in seconds
        # Each queued answer's throttle and who it is charged to, in request order.
        self._queued: deque[tuple[float, tuple[str, str] | None]] = deque()
        self._until = 0.0  # no request is read before this (monotonic seconds)

    def asking(self, principal: Principal | None, client_id: str | None) -> None:
        """Who the request being dispatched is charged to."""
        if self._throttles is None or not self._throttles.quotas:
            self._who = None
        elif principal is not None and principal.instance:
            self._who = None  # another kop instance
        else:
            user = principal.role if principal is not None else ""
            self._who = (user or ANONYMOUS, client_id or "")

    async def admitted(self) -> None:
        """A client already over its share of the loop waits before its request is
        handled, whichever of its connections it came on: a new connection's first
        request would otherwise be handled at once, and a client that opens one per
        request would never wait (Kafka handles it, then throttles)."""
        if self._who is None or self._throttles is None:
            return
        owed = self._throttles.owed(REQUEST_PERCENTAGE, *self._who)
        if owed > 0:
            self._observer.throttled(REQUEST_PERCENTAGE, owed)
            await asyncio.sleep(owed)

    def dispatched(self, api_key: int, frame_bytes: int, loop_s: float) -> None:
        """The ordered part of a request is done: charge it."""
        owed = self._charge(REQUEST_PERCENTAGE, loop_s * 100)
        if api_key == ApiKey.PRODUCE:
            owed = max(owed, self._charge(PRODUCER_BYTE_RATE, frame_bytes))
        self._owed = owed

    def queued(self) -> None:
        """The request's answer is queued (every request's, charged or not)."""
        self._queued.append((self._owed, self._who))
        self._owed = 0.0
        self._who = None

    def answering(self, api_key: int, result: Any, loop_s: float) -> Any:
        """The oldest queued answer is made (its slow part held the loop `loop_s`):
        charge it; the answer with its `throttle_time` set (kio's answers are frozen:
        a throttled one is a copy)."""
        owed, who = self._queued.popleft() if self._queued else (0.0, None)
        if who is not None:
            owed = max(owed, self._charge(REQUEST_PERCENTAGE, loop_s * 100, who))
            if api_key == ApiKey.FETCH and result is not None:
                owed = max(owed, self._charge(CONSUMER_BYTE_RATE, _record_bytes(result), who))
        if owed <= 0 or result is None:
            return result
        ms = round(owed * 1000)
        before = getattr(result, "throttle_time", None)
        if not isinstance(before, datetime.timedelta):
            return result  # the answer has no throttle time at this version
        wanted = max(before, datetime.timedelta(milliseconds=ms))
        return dataclasses.replace(result, throttle_time=i32Timedelta.parse(wanted))

    async def muted(self) -> None:
        """Returns once the connection may be read again."""
        wait = self._until - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    def _charge(self, key: str, amount: float, who: tuple[str, str] | None = None) -> float:
        who = who or self._who
        if who is None or self._throttles is None:
            return 0.0
        owed = self._throttles.charge(key, *who, amount)
        if owed > 0:
            self._until = max(self._until, time.monotonic() + owed)
            self._observer.throttled(key, owed)
        return owed


def _record_bytes(result: Any) -> int:
    """The record bytes of a Fetch answer (what Kafka charges to the fetch quota)."""
    if isinstance(result, Mapping):
        parts = [
            p.get("records") for t in result.get("responses", ()) for p in t.get("partitions", ())
        ]
    else:
        parts = [p.records for t in result.responses for p in t.partitions]
    return sum(len(records) for records in parts if records is not None)
