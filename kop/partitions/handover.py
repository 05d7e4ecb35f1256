"""Partitions moving between instances.

Each time the live instances change, the partitions this one serves and no longer
owns are released: their indexes persisted, so the new owner resumes from them.
Until the new owner's fence (its partition writer) is up, the old one may still
believe it owns and try to write; Pulsar refuses it then (kop.cluster). The
partitions it gained are opened in the background (`warmup`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from kop.cluster.ownership import Ownership
from kop.partitions.manager import LogManager
from kop.partitions.warmup import open_gained
from kop.topics.catalog import TopicCatalog

log = logging.getLogger(__name__)


async def follow(
    ownership: Ownership,
    logs: LogManager,
    catalog: TopicCatalog | None = None,
    taken_elsewhere: Callable[[], Iterable[str]] = lambda: (),
) -> None:
    """`taken_elsewhere`: the partitions another process took last (the leader-epoch
    table), of which those now owned here are opened ahead of their clients."""
    version = ownership.version
    warming: set[asyncio.Task[None]] = set()
    try:
        while True:
            version = await ownership.changed(version)
            if catalog is not None:
                task = asyncio.create_task(
                    open_gained(taken_elsewhere(), logs, catalog), name="open-gained"
                )
                warming.add(task)
                task.add_done_callback(warming.discard)
            lost = [topic for topic in logs.owned() if not ownership.mine(topic)]
            if not lost:
                continue
            log.info("releasing %d partitions now owned by other instances", len(lost))
            try:
                await logs.release(lost)
            except Exception:  # the next change tries again; serving goes on meanwhile
                log.exception("releasing partitions")
    finally:
        for task in list(warming):
            task.cancel()
        await asyncio.gather(*warming, return_exceptions=True)
