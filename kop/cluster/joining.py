"""An instance joining the others at start: its checks first (its advertised address
resolves; its node id is its own, locked by an exclusive writer held for the
process's life), before anything is written; then its first heartbeats."""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import dataclass

from kop.cluster.beats import BeatSeal
from kop.cluster.member import Member
from kop.cluster.membership import Membership
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.port import MessageLog, StorageAdmin
from kop.storage.types import AdminError, StorageError, WriterBusy, WriterMode

log = logging.getLogger(__name__)

MEMBERS_RETENTION_MS = 600_000  # heartbeats are worth minutes, not the system namespace's forever


class JoinRefused(Exception):
    """This instance cannot join; the message is one line saying what to change."""


@dataclass(frozen=True, slots=True)
class Liveness:
    interval_s: float
    ttl_s: float


async def join(
    storage: MessageLog,
    admin: StorageAdmin,
    system: Namespace,
    me: Member,
    liveness: Liveness,
    seal: BeatSeal | None = None,
    start_wait_s: float = 60.0,
) -> Membership:
    """Joined, or JoinRefused. Several instances need `seal` (the cluster secret), the
    same on each: an instance without it refuses to join another, and one with it
    refuses to join an instance whose beats it cannot verify (docs/security.md).
    `start_wait_s`: how long a Pulsar slow to make kop's first topic is waited for."""
    try:
        await asyncio.get_running_loop().getaddrinfo(me.host, me.port)
    except socket.gaierror as exc:
        raise JoinRefused(
            f"advertised_host {me.host!r} does not resolve ({exc.strerror}): clients "
            "could not reach this instance; set KOP_ADVERTISED_HOST to a name they resolve"
        ) from None
    lock = PulsarTopic(system, f"kop-node-{me.node_id}", "").full
    try:
        await _lock(storage, lock, start_wait_s)
    except WriterBusy:
        raise JoinRefused(
            f"node_id {me.node_id} is held by another live kop instance sharing "
            f"system_namespace {system.path}: give every instance its own node_id (KOP_NODE_ID)"
        ) from None
    topic = PulsarTopic(system, "kop-members", "")
    membership = Membership(
        storage, topic.full, me, interval_s=liveness.interval_s, ttl_s=liveness.ttl_s, seal=seal
    )
    await membership.join()
    refusal = _alone_or_sealed(membership, system, seal is not None)
    if refusal:
        await membership.leave()
        raise JoinRefused(refusal)
    try:
        await admin.set_retention(topic, MEMBERS_RETENTION_MS, 64 << 20)
    except (AdminError, StorageError) as exc:
        log.warning("could not limit the retention of %s: %s", topic.full, exc)
    return membership


async def _lock(storage: MessageLog, lock: str, wait_s: float) -> None:
    """The node lock is the first topic kop makes. A cold Pulsar (a standalone just
    started, a namespace bundle still loading) may take longer than one operation to
    make it: that is waited for, up to `wait_s`, as the start's other checks wait for
    Pulsar; a refusal (WriterBusy, not retriable) is not."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        try:
            await storage.writer(lock, mode=WriterMode.EXCLUSIVE)
            return
        except WriterBusy:
            raise
        except StorageError as exc:
            if not exc.retriable or loop.time() >= deadline:
                raise
            log.info("waiting for Pulsar to make %s: %s", lock, exc)
            await asyncio.sleep(1.0)


def _alone_or_sealed(membership: Membership, system: Namespace, sealed: bool) -> str:
    """Why this instance may not join the others it found ("" if it may)."""
    others = [m for m in membership.live() if m.node_id != membership.me.node_id]
    if not sealed and (others or membership.joining):
        # One starting at the same moment counts too: each beats `joining` before it
        # reads, so of two starting together the later sees the earlier (D18).
        other = (
            f"node {others[0].node_id} ({others[0].host}:{others[0].port}) is a live"
            if others
            else f"node {membership.joining[0]} is starting as a"
        )
        return (
            f"{other} kop instance sharing system_namespace {system.path}: several "
            "instances need cluster_secret (KOP_CLUSTER_SECRET), the same on each"
        )
    if sealed and membership.strangers:
        return (
            f"node {membership.strangers[0]} is beating in system_namespace {system.path} "
            "without this instance's cluster_secret: give every instance the same "
            "cluster_secret (KOP_CLUSTER_SECRET)"
        )
    return ""
