"""Offset-index checkpoints and marks, persisted in compacted Pulsar topics.

One message per checkpoint (a flush is one batch entry), keyed
`partition|offset` (compaction keeps each once; a tombstone forgets one), one
per partition keyed `partition|mark` (the last counted position and the offset
after it), and one per idempotent producer keyed `partition|p<id>` (its epoch
and last batches, as Kafka snapshots them), one keyed `partition|txn`: its open and
aborted transactions (`{"o": {pid: first offset}, "a": [[first, pid, marker]]}`,
written whole when it changed), and one keyed `partition|floor`: the
log start DeleteRecords set (kop's own, since Pulsar cannot delete single
messages), written alone and at once, because the DeleteRecords is answered only
after it is persisted. The index is spread over `shards` topics by a hash of the
partition, so a partition opening reads only its shard, not the whole index:
loading is per partition, on first use. A shard read is shared by partitions
opening around the same time.

A compacted topic adds one message per surviving entry, keyed `partition|c<offset>`,
and its compaction horizon, keyed `partition|horizon` (see `survivors.py`)."""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from dataclasses import dataclass, field
from typing import Any

from kop.log.compacted.survivors import Horizon, Survivor
from kop.log.offset_index import Checkpoint, Mark
from kop.log.producer_state import Snapshot
from kop.log.txn_index import Aborted, TxnSnapshot
from kop.storage import batch_layout
from kop.storage.port import MessageLog
from kop.storage.types import Idle, OutgoingEntry, OutgoingMessage, Position, StoredMessage

log = logging.getLogger(__name__)

_MARK = "mark"
_FLOOR = "floor"
_HORIZON = "horizon"
_TXN = "txn"
# Index messages per entry when a compaction pass saves its survivors: an entry
# stays far below any broker's message size limit.
_PER_ENTRY = 1000


@dataclass(slots=True)
class Persisted:
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    mark: Mark | None = None
    producers: dict[int, Snapshot] = field(default_factory=dict)
    floor: int = 0  # DeleteRecords: offsets below are not served
    survivors: dict[int, Survivor] = field(default_factory=dict)
    horizon: Horizon | None = None
    txns: TxnSnapshot = field(default_factory=lambda: ({}, []))

    def sorted(self) -> list[Checkpoint]:
        return sorted(self.checkpoints.values())


class CheckpointStore:
    def __init__(
        self, storage: MessageLog, prefix: str, shards: int = 16, cache_s: float = 30.0
    ) -> None:
        self._storage = storage
        self.prefix = prefix
        self._shards = shards
        self._cache_s = cache_s
        self._cache: dict[int, tuple[float, dict[str, Persisted]]] = {}
        self._loading: dict[int, asyncio.Task[dict[str, Persisted]]] = {}

    def shard_topic(self, partition: str) -> str:
        return f"{self.prefix}-{self._shard(partition)}"

    def _shard(self, partition: str) -> int:
        return zlib.crc32(partition.encode()) % self._shards

    async def load(self, partition: str) -> Persisted:
        shard = self._shard(partition)
        now = asyncio.get_running_loop().time()
        cached = self._cache.get(shard)
        if cached is None or now - cached[0] > self._cache_s:
            task = self._loading.get(shard)
            if task is None:
                task = asyncio.ensure_future(self._read_shard(shard))
                self._loading[shard] = task
                task.add_done_callback(lambda _t: self._loading.pop(shard, None))
            cached = (now, await asyncio.shield(task))
            self._cache[shard] = cached
        found = cached[1].get(partition, Persisted())
        return Persisted(
            dict(found.checkpoints),
            found.mark,
            dict(found.producers),
            found.floor,
            dict(found.survivors),
            found.horizon,
            (dict(found.txns[0]), list(found.txns[1])),
        )

    async def _read_shard(self, shard: int) -> dict[str, Persisted]:
        topic = f"{self.prefix}-{shard}"
        found: dict[str, Persisted] = {}
        reader = await self._storage.reader(topic, None, compacted=True)
        reader.report_idle()
        count = 0
        try:
            while not isinstance(stored := await reader.read(), Idle):
                for msg in batch_layout.messages(stored):
                    count += 1
                    _apply(found, topic, msg)
        finally:
            await reader.close()
        log.debug("read %d index messages of %d partitions from %s", count, len(found), topic)
        return found

    async def save(
        self,
        partition: str,
        created: list[Checkpoint],
        dropped: list[Checkpoint],
        mark: Mark | None,
        producers: dict[int, Snapshot | None] | None = None,
        txns: TxnSnapshot | None = None,
    ) -> None:
        """Persist in one entry (all or nothing): tombstones, new checkpoints,
        producers, transactions, then the mark (a persisted mark never names state that
        is missing)."""
        producers = producers or {}
        keep = {c.offset for c in created}
        messages = [
            OutgoingMessage(None, {}, _key(partition, c.offset), None)
            for c in dropped
            if c.offset not in keep
        ]
        messages += [
            OutgoingMessage(_checkpoint_body(c), {}, _key(partition, c.offset), None)
            for c in created
        ]
        messages += [
            OutgoingMessage(
                None if snap is None else _snapshot_body(snap),
                {},
                f"{partition}|p{pid}",
                None,
            )
            for pid, snap in producers.items()
        ]
        if txns is not None:
            messages.append(OutgoingMessage(_txn_body(txns), {}, f"{partition}|{_TXN}", None))
        if mark is not None:
            body = {**_position(mark.position), "n": mark.next_offset, "t": mark.max_timestamp}
            messages.append(
                OutgoingMessage(json.dumps(body).encode(), {}, f"{partition}|{_MARK}", None)
            )
        if not messages:
            return
        writer = await self._storage.writer(self.shard_topic(partition))
        await writer.send_all([batch_layout.entry(messages)])[1]
        cached = self._cache.get(self._shard(partition))
        if cached is not None:
            state = cached[1].setdefault(partition, Persisted())
            for c in dropped:
                state.checkpoints.pop(c.offset, None)
            state.checkpoints.update({c.offset: c for c in created})
            state.mark = mark or state.mark
            if txns is not None:
                state.txns = txns
            for pid, snap in producers.items():
                if snap is None:
                    state.producers.pop(pid, None)
                else:
                    state.producers[pid] = snap

    async def save_survivors(
        self,
        partition: str,
        created: list[Survivor],
        dropped: list[Survivor],
        horizon: Horizon | None,
    ) -> None:
        """Persist a compaction pass: tombstones, new survivors, then the horizon, in
        entries of `_PER_ENTRY` messages. A pass cut short leaves the old horizon, so
        the next pass repeats it (saving a survivor twice changes nothing)."""
        keep = {c.offset for c in created}
        messages = [
            OutgoingMessage(None, {}, _survivor_key(partition, d.offset), None)
            for d in dropped
            if d.offset not in keep
        ]
        messages += [
            OutgoingMessage(_survivor_body(c), {}, _survivor_key(partition, c.offset), None)
            for c in created
        ]
        if horizon is not None:
            body = {**_position(horizon.position), "n": horizon.next_offset, "s": horizon.start}
            messages.append(
                OutgoingMessage(json.dumps(body).encode(), {}, f"{partition}|{_HORIZON}", None)
            )
        if not messages:
            return
        writer = await self._storage.writer(self.shard_topic(partition))
        for i in range(0, len(messages), _PER_ENTRY):
            await writer.send_all([batch_layout.entry(messages[i : i + _PER_ENTRY])])[1]
        cached = self._cache.get(self._shard(partition))
        if cached is not None:
            state = cached[1].setdefault(partition, Persisted())
            for d in dropped:
                state.survivors.pop(d.offset, None)
            state.survivors.update({c.offset: c for c in created})
            state.horizon = horizon or state.horizon

    async def save_floor(self, partition: str, offset: int) -> None:
        """Persist the DeleteRecords floor; returns once Pulsar stored it."""
        body = json.dumps({"o": offset}).encode()
        writer = await self._storage.writer(self.shard_topic(partition))
        floor = OutgoingMessage(body, {}, f"{partition}|{_FLOOR}", None)
        await writer.send_all([OutgoingEntry.of(floor)])[1]
        cached = self._cache.get(self._shard(partition))
        if cached is not None:
            cached[1].setdefault(partition, Persisted()).floor = offset

    async def forget(self, partition: str) -> None:
        """Tombstone every entry of a deleted partition, so a topic re-created under
        the same name starts at offset 0."""
        known = await self.load(partition)
        messages = [OutgoingMessage(None, {}, _key(partition, o), None) for o in known.checkpoints]
        messages += [OutgoingMessage(None, {}, f"{partition}|p{p}", None) for p in known.producers]
        messages += [
            OutgoingMessage(None, {}, _survivor_key(partition, o), None) for o in known.survivors
        ]
        messages.append(OutgoingMessage(None, {}, f"{partition}|{_HORIZON}", None))
        messages.append(OutgoingMessage(None, {}, f"{partition}|{_TXN}", None))
        messages.append(OutgoingMessage(None, {}, f"{partition}|{_MARK}", None))
        messages.append(OutgoingMessage(None, {}, f"{partition}|{_FLOOR}", None))
        writer = await self._storage.writer(self.shard_topic(partition))
        for i in range(0, len(messages), _PER_ENTRY):
            await writer.send_all([batch_layout.entry(messages[i : i + _PER_ENTRY])])[1]
        cached = self._cache.get(self._shard(partition))
        if cached is not None:
            cached[1].pop(partition, None)


def _apply(found: dict[str, Persisted], topic: str, msg: StoredMessage) -> None:
    """One index message read back: its key says what it sets (a tombstone clears).
    Never raises: anyone who can write to the index topic writes what they like, and
    an unreadable message is logged and skipped, not a reason to stop loading."""
    partition, _, what = msg.partition_key.rpartition("|")
    state = found.setdefault(partition, Persisted())
    gone = msg.null_value or not msg.payload
    try:
        if what == _MARK:
            state.mark = None if gone else _mark(_object(msg.payload))
        elif what == _FLOOR:
            state.floor = 0 if gone else _i64(_object(msg.payload)["o"])
        elif what == _HORIZON:
            state.horizon = None if gone else _horizon(_object(msg.payload))
        elif what == _TXN:
            state.txns = ({}, []) if gone else _txns(_object(msg.payload))
        elif what.startswith("c"):
            offset = _i64(int(what[1:]))
            if gone:
                state.survivors.pop(offset, None)
            else:
                state.survivors[offset] = _survivor(offset, _object(msg.payload))
        elif what.startswith("p"):
            pid = _i64(int(what[1:]))
            if gone:
                state.producers.pop(pid, None)
            else:
                state.producers[pid] = _snapshot(_object(msg.payload))
        elif gone:
            state.checkpoints.pop(_i64(int(what)), None)
        else:
            offset = _i64(int(what))
            state.checkpoints[offset] = _checkpoint(offset, msg.payload)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        log.warning("%s: unreadable index entry %r: %s", topic, msg.partition_key, exc)


_INT64 = 1 << 63


def _i64(v: object) -> int:
    """A number kop wrote: an int (not a bool, a float, NaN or text), within int64."""
    if type(v) is not int or not -_INT64 <= v < _INT64:
        raise ValueError(f"not an int64: {v!r:.40}")
    return v


def _object(payload: bytes) -> dict[str, Any]:
    """The JSON object a payload holds (ValueError for anything else; RecursionError
    for absurd nesting)."""
    v = json.loads(payload)
    if type(v) is not dict:
        raise ValueError("not a JSON object")
    return v


def _key(partition: str, offset: int) -> str:
    return f"{partition}|{offset:020d}"


def _position(p: Position) -> dict[str, int]:
    return {"l": p.ledger, "e": p.entry, "b": p.batch}


def _checkpoint_body(c: Checkpoint) -> bytes:
    return json.dumps({**_position(c.position), "t": c.max_ts_before}).encode()


def _checkpoint(offset: int, payload: bytes) -> Checkpoint:
    v = _object(payload)
    return Checkpoint(offset, _read_position(v), _i64(v["t"]))


def _read_position(v: dict[str, Any]) -> Position:
    return Position(_i64(v["l"]), _i64(v["e"]), _i64(v["b"]))


def _snapshot_body(snap: Snapshot) -> bytes:
    body: dict[str, Any] = {"e": snap.epoch, "b": snap.batches}
    if snap.starts_at_zero:
        body["z"] = 1  # absent in what kop wrote before it was kept: False
    if snap.coordinator_epoch >= 0:
        body["c"] = snap.coordinator_epoch  # absent before issue 33: -1, any marker taken
    if snap.floor >= 0:
        body["f"] = snap.floor  # absent before it was kept: the oldest batch's sequence
    return json.dumps(body).encode()


def _snapshot(v: dict[str, Any]) -> Snapshot:
    batches = [(_i64(a), _i64(b), _i64(c), _i64(d)) for a, b, c, d in v["b"]]
    return Snapshot(
        _i64(v["e"]), batches, v.get("z") == 1, _i64(v.get("c", -1)), _i64(v.get("f", -1))
    )


def _mark(v: dict[str, Any]) -> Mark:
    return Mark(_read_position(v), _i64(v["n"]), _i64(v.get("t", -1)))


def _survivor_key(partition: str, offset: int) -> str:
    return f"{partition}|c{offset:020d}"


def _survivor_body(s: Survivor) -> bytes:
    return json.dumps({"l": s.ledger, "e": s.entry, "t": s.publish_time}).encode()


def _survivor(offset: int, v: dict[str, Any]) -> Survivor:
    return Survivor(offset, _i64(v["l"]), _i64(v["e"]), _i64(v["t"]))


def _horizon(v: dict[str, Any]) -> Horizon:
    return Horizon(_read_position(v), _i64(v["n"]), _i64(v.get("s", 0)))


def _txn_body(txns: TxnSnapshot) -> bytes:
    open_txns, aborted = txns
    body = {
        "o": {str(pid): first for pid, first in open_txns.items()},
        "a": [[a.first_offset, a.producer_id, a.last_offset] for a in aborted],
    }
    return json.dumps(body, separators=(",", ":")).encode()


def _txns(body: dict[str, Any]) -> TxnSnapshot:
    if type(body["o"]) is not dict or type(body["a"]) is not list:
        raise ValueError("not a transaction snapshot")
    open_txns = {_i64(int(pid)): _i64(first) for pid, first in body["o"].items()}
    aborted = [Aborted(_i64(f), _i64(p), _i64(last)) for f, p, last in body["a"]]
    return open_txns, aborted
