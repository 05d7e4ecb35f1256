"""The records of the transaction state topic: pure encode/decode, no I/O.

A compacted Pulsar topic beside the offsets topic, one message per change of a
transactional id: the partition key is the transactional id itself (any UTF-8
text), the payload its state as a UTF-8 JSON object with a format version `v` (now
1; any other value is malformed, i.e. written by a kop this one does not read):

    {"v": 1, "producer_id": 4001, "epoch": 3, "last_epoch": 2, "timeout_ms": 60000,
     "state": "Ongoing", "partitions": [["persistent://public/default/orders-partition-0", 0]],
     "started_ms": 1700000000000, "tv": 2, "next_producer_id": -1, "prev_producer_id": -1,
     "updated_ms": 1700000000000}

`state` is one of Kafka's names (Empty, Ongoing, PrepareCommit, PrepareAbort,
CompleteCommit, CompleteAbort); a partition is its Pulsar topic (the topic itself
when not partitioned) and its Kafka index. A null payload is a
tombstone: compaction forgets an id that expired. `tv` (the client transaction
version, KIP-890), `next_producer_id` and `prev_producer_id` (a version-2 end past
the last epoch) came later: a record without them is version 1 with neither id.
`updated_ms` (when the change was made, for `transactional_id_expiration_ms`) came
with issue 33: a record without it counts from when it is loaded.
`decode` raises `MalformedRecord`, and only that, for anything it cannot read, so the
loader skips and counts it.
"""

from __future__ import annotations

import json
from typing import Any

from kop.txn.state import State, TxnMeta

VERSION = 1
_STATES = {s.value: s for s in State}
_INT64 = (-(2**63), 2**63 - 1)


class MalformedRecord(Exception):
    """A record of the transaction state topic that this kop cannot read."""


def encode(meta: TxnMeta) -> tuple[str, bytes]:
    """(partition key, payload)."""
    value = {
        "v": VERSION, "producer_id": meta.producer_id, "epoch": meta.epoch,
        "last_epoch": meta.last_epoch, "timeout_ms": meta.timeout_ms,
        "state": meta.state.value, "partitions": sorted([t, p] for t, p in meta.partitions),
        "started_ms": meta.started_ms, "tv": meta.version,
        "next_producer_id": meta.next_producer_id, "prev_producer_id": meta.prev_producer_id,
        "updated_ms": meta.updated_ms,
    }  # fmt: skip
    return meta.txn_id, json.dumps(value, separators=(",", ":")).encode()


def decode(key: str, payload: bytes | None) -> TxnMeta | None:
    """The state a record holds; None for a tombstone."""
    if not payload:
        return None
    try:
        value = json.loads(payload)
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedRecord(f"transaction state of {key!r} is not JSON: {exc}") from None
    if not isinstance(value, dict) or value.get("v") != VERSION:
        raise MalformedRecord(f"transaction state of {key!r}: not format version {VERSION}")
    name = value.get("state")
    state = _STATES.get(name) if isinstance(name, str) else None
    if state is None:
        raise MalformedRecord(f"transaction state of {key!r}: unknown state")
    parts = value.get("partitions")
    if not isinstance(parts, list) or not all(_is_partition(p) for p in parts):
        raise MalformedRecord(f"transaction state of {key!r}: bad partitions")
    return TxnMeta(
        key, _int(value, "producer_id", key), _int(value, "epoch", key),
        _int(value, "timeout_ms", key), state, frozenset((t, p) for t, p in parts),
        _int(value, "started_ms", key), _int(value, "last_epoch", key),
        _int(value, "tv", key, 1), _int(value, "next_producer_id", key, -1),
        _int(value, "prev_producer_id", key, -1), _int(value, "updated_ms", key, -1),
    )  # fmt: skip


def _int(value: dict[str, Any], name: str, key: str, default: int | None = None) -> int:
    got = value.get(name, default)
    if type(got) is not int or not _INT64[0] <= got <= _INT64[1]:
        raise MalformedRecord(f"transaction state of {key!r}: {name} is not an integer")
    return got


def _is_partition(p: object) -> bool:
    return (
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
        and type(p[1]) is int and 0 <= p[1] < 2**31
    )  # fmt: skip
