"""Heartbeats as read back from the members topic: decoded (what another program
wrote there is skipped and counted; with a cluster secret, so is a beat it did not
sign), and a joiner's first read, up to its own beat."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from kop.cluster.member import MalformedBeat, Member, State, proof_of
from kop.storage import batch_layout
from kop.storage.port import TopicReader
from kop.storage.types import Idle, StoredEntry

log = logging.getLogger("kop.cluster.membership")  # where these lines always went


class BeatSeal(Protocol):
    """Signs and checks beats with the cluster secret (kop.sasl.peers)."""

    def beat_proof(self, beat: bytes) -> str: ...

    def verifies_beat(self, beat: bytes, proof: str) -> bool: ...


class BeatDecoder:
    def __init__(self, topic: str, seal: BeatSeal | None = None) -> None:
        self.topic = topic
        self.malformed = 0
        self._seal = seal
        # Beats that did not prove they came from an instance of this cluster: node id
        # -> the last one's publish time (a forged beat, or an instance without the
        # same cluster secret). Never counted as members.
        self.unproven: dict[int, int] = {}
        self.unproven_count = 0  # every such beat read (kop_heartbeats_unproven_total)

    def decoded(self, got: StoredEntry | Idle) -> list[tuple[Member, int]]:
        """The beats in one entry, each with its publish time (ms, the broker's clock)."""
        if isinstance(got, Idle):
            return []
        out = []
        for msg in batch_layout.messages(got):
            try:
                member = Member.decode(msg.payload)
            except MalformedBeat as exc:
                self.malformed += 1
                if self.malformed == 1:
                    log.warning("%s holds a message that is not a heartbeat: %s", self.topic, exc)
                continue
            if self._seal is not None and not self._seal.verifies_beat(
                member.encode(), proof_of(msg.payload)
            ):
                if member.node_id not in self.unproven:
                    log.warning(
                        "%s: a heartbeat as node %d not signed with this cluster's secret "
                        "is ignored", self.topic, member.node_id,
                    )  # fmt: skip
                self.unproven[member.node_id] = msg.publish_time
                self.unproven_count += 1
                continue
            out.append((member, msg.publish_time))
        return out


async def read_to_own_beat(
    reader: TopicReader, me: Member, decoder: BeatDecoder
) -> tuple[dict[int, tuple[Member, int]], int]:
    """Each other node's last beat (with its publish time) before `me`'s first, and
    the publish time of that first: now, on the broker's clock. Beats of an earlier
    instance with this node id are this node's past (the node lock, not the beats,
    keeps two live instances from sharing an id)."""
    seen: dict[int, tuple[Member, int]] = {}
    while True:
        for member, published in decoder.decoded(await reader.read()):
            if member.instance == me.instance:
                return seen, published
            if member.node_id != me.node_id:
                seen[member.node_id] = (member, published)


@dataclass(frozen=True, slots=True)
class FirstLook:
    """Who else was there when an instance joined, from the beats before its first."""

    live: list[tuple[Member, float]]  # (member, age of its last beat in seconds)
    joining: list[int]  # nodes starting at the same time (their last beat `joining`)
    strangers: list[int]  # nodes beating unsigned (not with this instance's secret)


def first_look(
    seen: dict[int, tuple[Member, int]], unproven: dict[int, int], joined_ms: int, ttl_s: float
) -> FirstLook:
    """What `read_to_own_beat` found, as of the first beat's time: only beats younger
    than the TTL count."""
    ages = {
        node: (member, (joined_ms - published) / 1000) for node, (member, published) in seen.items()
    }
    recent = {node: (m, age) for node, (m, age) in ages.items() if age < ttl_s}
    return FirstLook(
        live=[(m, age) for m, age in recent.values() if m.state is State.LIVE],
        joining=sorted(node for node, (m, _) in recent.items() if m.state is State.JOINING),
        strangers=sorted(n for n, at in unproven.items() if (joined_ms - at) / 1000 < ttl_s),
    )


class Rivals:
    """Other instances beating with this instance's node id: each logged once, not once
    a beat (the node lock keeps two live ones apart; this says what went wrong)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def heard(self, member: Member) -> None:
        if member.instance not in self._seen:
            self._seen.add(member.instance)
            log.error(
                "another kop instance (%s:%d) beats as node %d, this one's node_id: "
                "give every instance its own",
                member.host, member.port, member.node_id,
            )  # fmt: skip
