"""Rendezvous (highest random weight) hashing: every instance computes the same
owner from the same set of live nodes, and a change of that set moves only the
keys of the node that left (or a fair share to the one that joined)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def weight(node_id: int, key: str) -> int:
    digest = hashlib.blake2b(f"{node_id}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(key: str, nodes: Iterable[int]) -> int | None:
    """The node that owns `key` (None: no node)."""
    best: tuple[int, int] | None = None
    for node in nodes:
        w = (weight(node, key), node)
        if best is None or w > best:
            best = w
    return None if best is None else best[1]
