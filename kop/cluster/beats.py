"""Heartbeats as read back from the members topic: decoded (what another program
wrote there is skipped and counted), and a joiner's first read, up to its own beat."""

from __future__ import annotations

import logging

from kop.cluster.member import MalformedBeat, Member
from kop.storage import batch_layout
from kop.storage.port import TopicReader
from kop.storage.types import Idle, StoredEntry

log = logging.getLogger("kop.cluster.membership")  # where these lines always went


class BeatDecoder:
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.malformed = 0

    def decoded(self, got: StoredEntry | Idle) -> list[tuple[Member, int]]:
        """The beats in one entry, each with its publish time (ms, the broker's clock)."""
        if isinstance(got, Idle):
            return []
        out = []
        for msg in batch_layout.messages(got):
            try:
                out.append((Member.decode(msg.payload), msg.publish_time))
            except MalformedBeat as exc:
                self.malformed += 1
                if self.malformed == 1:
                    log.warning("%s holds a message that is not a heartbeat: %s", self.topic, exc)
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
