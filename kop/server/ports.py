"""What a connection is given: where requests come from, where answers go, and who
is told about them (the ops layer implements the observer with metrics)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kop.protocol.frame_pieces import Frame


class FrameSource(Protocol):
    """Where requests come from (`RequestStream`)."""

    async def next_frame(self) -> bytes | memoryview | None: ...

    def frame_done(self) -> None: ...

    @property
    def ended_inside_prefix(self) -> bool: ...

    def feed_eof(self) -> None: ...

    def limit_frames(self, max_frame_bytes: int) -> None:
        """The largest frame accepted from the next one on."""


class ResponseSink(Protocol):
    """Where answers go: the parts of `asyncio.StreamWriter` a connection uses."""

    def write(self, frame: Frame) -> None:
        """A frame whole, or in pieces (a Fetch answer's records not copied)."""

    async def drain(self) -> None: ...

    async def writable(self) -> None:
        """Returns once answers do not back up (or the socket is gone)."""

    def unsent(self) -> int:
        """Bytes written and not yet taken by the socket."""

    def abort(self) -> None:
        """Close now, dropping what was not sent."""

    def get_extra_info(self, name: str, default: Any = None) -> Any: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


class RequestObserver(Protocol):
    """Told about every request and connection; the ops layer implements it with metrics."""

    def request_done(
        self, api_key: int, seconds: float, ok: bool, errors: Mapping[int, int]
    ) -> None:
        """A request answered (`ok`: an answer was made) in `seconds`, carrying these
        Kafka error codes, each so many times (kop.protocol.error_counts)."""

    def connection_change(self, delta: int) -> None: ...

    def connection_closed(self, reason: str) -> None:
        """kop closed (or refused) a connection, for `reason` (see `closing`)."""

    def throttled(self, quota: str, seconds: float) -> None:
        """A client over its `quota` (a quota key) waits `seconds` (kop.quotas)."""
