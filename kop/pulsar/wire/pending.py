"""Requests sent to a broker and not answered yet, matched to answers by request id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kop.pulsar.wire.errors import OperationTimeoutError, PulsarWireError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand.Type


class PendingRequests:
    """One future per outstanding request id; each ends answered, failed or timed out."""

    def __init__(self, loop: asyncio.AbstractEventLoop, address: str, timeout_s: float) -> None:
        self._loop = loop
        self._address = address
        self._timeout = timeout_s
        self._futures: dict[int, asyncio.Future[pb.BaseCommand]] = {}
        self._next_id = 0

    def __len__(self) -> int:
        return len(self._futures)

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def call(
        self,
        command: pb.BaseCommand,
        request_id: int,
        send: Callable[[pb.BaseCommand], None],
    ) -> pb.BaseCommand:
        """Registers the waiter before sending, so an answer cannot arrive unseen."""
        future: asyncio.Future[pb.BaseCommand] = self._loop.create_future()
        self._futures[request_id] = future
        send(command)
        try:
            async with asyncio.timeout(self._timeout):
                return await future
        except TimeoutError as exc:
            what = T.Name(command.type)
            raise OperationTimeoutError(
                f"{what} to {self._address}: no answer in {self._timeout}s"
            ) from exc
        finally:
            self._futures.pop(request_id, None)

    def resolve(self, request_id: int, command: pb.BaseCommand) -> None:
        future = self._futures.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(command)

    def fail(self, request_id: int, error: PulsarWireError) -> bool:
        """False if no request waits under `request_id`: the caller decides what else
        the error can be about."""
        future = self._futures.pop(request_id, None)
        if future is None or future.done():
            return False
        future.set_exception(error)
        return True

    def fail_all(self, error: PulsarWireError) -> None:
        futures, self._futures = self._futures, {}
        for future in futures.values():
            if not future.done():
                future.set_exception(error)
