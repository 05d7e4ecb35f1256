"""PING a broker now and then, and give up on a connection that stops answering."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kop.pulsar.wire.errors import OperationTimeoutError, PulsarWireError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand.Type


class KeepAlive:
    """Every `interval_s`: PING, and abort unless something arrives within `timeout_s`.
    Any frame counts, not just the PONG: a connection busy streaming to us is alive,
    and a backlog of frames ahead of the PONG may delay it."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        address: str,
        interval_s: float,
        timeout_s: float,
        send: Callable[[pb.BaseCommand], None],
        abort: Callable[[PulsarWireError], None],
    ) -> None:
        self._loop = loop
        self._address = address
        self._interval = interval_s
        self._timeout = timeout_s
        self._send = send
        self._abort = abort
        self.heard = False  # any frame since our last PING; the connection sets it
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def start(self) -> None:
        self._timer = self._loop.call_later(self._interval, self._ping)

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()

    def _ping(self) -> None:
        if self._stopped:
            return
        self.heard = False
        self._send(pb.BaseCommand(type=T.PING, ping=pb.CommandPing()))
        self._timer = self._loop.call_later(self._timeout, self._check_pong)

    def _check_pong(self) -> None:
        if self._stopped:
            return
        if not self.heard:
            self._abort(OperationTimeoutError(f"no PONG from {self._address} in {self._timeout}s"))
            return
        self._timer = self._loop.call_later(max(0.0, self._interval - self._timeout), self._ping)
