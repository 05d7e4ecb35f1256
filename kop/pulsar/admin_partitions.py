"""Pulsar's admin calls about one topic partition's stored messages and cursors: its
size, its last message, its ledgers, and the subscriptions kop places on it (a group's
committed offsets mirrored as Pulsar subscriptions). Apart from `PulsarAdmin`'s
namespace and topic calls because they are another job: reading and moving one
partition's positions."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, quote_plus

from kop.storage.types import AdminError, Cursor, Position

Request = Callable[..., Awaitable[Any]]


class PartitionCalls:
    """Needs `_request` (kop.pulsar.admin_http.AdminHttp.request)."""

    _request: Request

    async def stored_bytes(self, topic: str) -> int:
        path = topic.removeprefix("persistent://")
        stats = await self._request("GET", f"persistent/{path}/stats", ok_missing=True)
        return int((stats or {}).get("storageSize", 0))

    async def last_message_id(self, topic: str) -> tuple[int, int, int] | None:
        """(ledger, entry, batch index) of the last stored message of a topic partition
        (`persistent://...`), or None when it holds none."""
        path = topic.removeprefix("persistent://")
        found = await self._request("GET", f"persistent/{path}/lastMessageId", ok_missing=True)
        if not isinstance(found, dict) or found.get("entryId", -1) < 0:
            return None
        return (int(found["ledgerId"]), int(found["entryId"]), int(found.get("batchIndex", -1)))

    async def ledgers(self, topic: str) -> list[tuple[int, int]]:
        """(ledger id, entries) of a topic partition's ledgers, oldest first, the open
        one last: where a reader may start, for whoever splits a partition's reading."""
        path = topic.removeprefix("persistent://")
        stats = await self._request("GET", f"persistent/{path}/internalStats", ok_missing=True)
        if not isinstance(stats, dict):
            return []
        found = [(int(d["ledgerId"]), int(d.get("entries", 0))) for d in stats.get("ledgers", [])]
        current = int(stats.get("currentLedgerEntries", 0))
        if found:
            found[-1] = (found[-1][0], max(found[-1][1], current))
        return found

    async def place_subscription(self, topic: str, name: str, at: Position | None) -> None:
        if not await self.create_subscription(topic, name, at):  # it exists: move it
            body = {**_message_id(at), "isExcluded": False}
            await self._request("POST", f"{_subscription_path(topic, name)}/resetcursor", body)

    async def create_subscription(self, topic: str, name: str, at: Position | None) -> bool:
        try:
            await self._request("PUT", _subscription_path(topic, name), _message_id(at))
        except AdminError as exc:
            if exc.status != 409:
                raise
            return False
        return True

    async def delete_subscription(self, topic: str, name: str) -> None:
        path = _subscription_path(topic, name)
        await self._request("DELETE", f"{path}?force=true", ok_missing=True)

    async def subscriptions(self, topic: str) -> list[str]:
        path = f"persistent/{topic.removeprefix('persistent://')}/subscriptions"
        return [str(name) for name in await self._request("GET", path, ok_missing=True) or []]

    async def cursor(self, topic: str, name: str) -> Cursor | None:
        """From the partition's internal stats (its owning broker's managed ledger):
        the cursor's mark-delete position and its individually deleted ranges."""
        path = topic.removeprefix("persistent://")
        stats = await self._request("GET", f"persistent/{path}/internalStats", ok_missing=True)
        found = (stats or {}).get("cursors", {}).get(name) if isinstance(stats, dict) else None
        if not isinstance(found, dict):
            return None
        try:
            return parse_cursor(
                str(found.get("markDeletePosition", "")),
                str(found.get("individuallyDeletedMessages", "[]")),
            )
        except ValueError as exc:
            raise AdminError(502, f"cursor {name} on {topic}: {exc}") from None


def _subscription_path(topic: str, name: str) -> str:
    """Pulsar decodes a subscription in a path twice (the web server, then its
    `Codec.decode`, a form decoder): once-encoded, a `+` became a space and a `%`
    was refused."""
    encoded = quote(quote_plus(name, safe=""), safe="")
    return f"persistent/{topic.removeprefix('persistent://')}/subscription/{encoded}"


# MessageId.latest: a subscription placed there delivers only what comes next.
_LATEST = {"ledgerId": 2**63 - 1, "entryId": 2**63 - 1, "partitionIndex": -1}

_KEY = r"(-?\d+):(-?\d+)"
_RANGE = re.compile(r"\(" + _KEY + r"\.\." + _KEY + r"\]")


def parse_cursor(mark_delete: str, individually_deleted: str) -> Cursor:
    """Pulsar's `markDeletePosition` ("ledger:entry") and `individuallyDeletedMessages`
    (Guava's RangeSet as text: "[(3:2..3:4], (3:6..3:7]]", each open below, closed
    above). A value Pulsar never writes is refused (ValueError), not guessed at."""
    head = re.fullmatch(_KEY, mark_delete.strip())
    if head is None:
        raise ValueError(f"not a position: {mark_delete!r}")
    ranges = tuple(
        ((int(a), int(b)), (int(c), int(d))) for a, b, c, d in _RANGE.findall(individually_deleted)
    )
    return Cursor((int(head[1]), int(head[2])), ranges)


def _message_id(at: Position | None) -> dict[str, object]:
    """A position as the admin API takes it (None: after the last message)."""
    if at is None:
        return dict(_LATEST)
    return {
        "ledgerId": at.ledger,
        "entryId": at.entry,
        "partitionIndex": -1,
        "batchIndex": at.batch,
    }
