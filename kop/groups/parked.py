"""Requests the coordinator parked, as futures the handlers await: one per token,
answered when the coordinator says, or with an error when kop shuts down."""

from __future__ import annotations

import asyncio

from kop.groups.rebalance import JoinResult, SyncResult

Result = JoinResult | SyncResult


class Parked:
    def __init__(self) -> None:
        self._waiting: dict[object, asyncio.Future[Result]] = {}

    def park(self) -> tuple[object, asyncio.Future[Result]]:
        token = object()
        fut: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._waiting[token] = fut
        return token, fut

    def answer(self, token: object, result: Result) -> None:
        fut = self._waiting.get(token)
        if fut is not None and not fut.done():  # its client may have gone
            fut.set_result(result)

    def forget(self, token: object) -> None:
        self._waiting.pop(token, None)

    async def wait(self, token: object, fut: asyncio.Future[Result]) -> Result:
        try:
            return await fut  # the client's own request timeout bounds the wait
        finally:
            self.forget(token)

    def answer_all(self, result: Result) -> None:
        for token in list(self._waiting):
            self.answer(token, result)
