"""Letting go of partitions whose ownership moved to another instance.

Each time the live instances change, the partitions this one serves and no longer
owns are released: their indexes persisted, so the new owner resumes from them.
Until the new owner's fence (its partition writer) is up, the old one may still
believe it owns and try to write; Pulsar refuses it then (kop.cluster).
"""

from __future__ import annotations

import logging

from kop.cluster.ownership import Ownership
from kop.log.manager import LogManager

log = logging.getLogger(__name__)


async def follow(ownership: Ownership, logs: LogManager) -> None:
    version = ownership.version
    while True:
        version = await ownership.changed(version)
        lost = [topic for topic in logs.owned() if not ownership.mine(topic)]
        if not lost:
            continue
        log.info("releasing %d partitions now owned by other instances", len(lost))
        try:
            await logs.release(lost)
        except Exception:  # the next change tries again; serving goes on meanwhile
            log.exception("releasing partitions")
