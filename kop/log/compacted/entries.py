"""An entry read from Pulsar's compacted ledger, as Kafka serves a cleaned segment.

Pulsar's compaction keeps a batch entry whole in shape: a message it removed
keeps its place, marked `compacted_out`, so the entry still holds as many
messages as when it was written, and every message keeps its batch index. The
entry therefore takes the same offsets it took in the live log; what compaction
removed becomes a gap, exactly as Kafka's cleaner leaves gaps. The batch served
spans the entry's last offset even when its last messages are gone (as Kafka
keeps a cleaned batch's last offset delta), so a consumer's next fetch starts
after the gap rather than asking for it again.
"""

from __future__ import annotations

from kop.entries import codec as entries
from kop.entries.codec import Entry
from kop.entries.formats import read_message
from kop.protocol.records import Record, build_batch
from kop.storage import batch_layout
from kop.storage.types import StoredEntry


def decode(entry: StoredEntry, base_offset: int) -> Entry:
    """The entry at `base_offset` without what compaction removed. Never raises."""
    if entry.message is not None:
        return entries.decode(entry, base_offset)  # a whole entry survives whole
    # Only the kept messages are built (each keeps its batch index): most of a
    # compacted batch's slots are usually removed ones.
    kept = batch_layout.messages(entry)
    if not kept:
        return _nothing_kept(entry, base_offset)
    if len(kept) == entry.count:
        return entries.decode(entry, base_offset)
    records: list[Record] = []
    anomalies: list[str] = []
    for msg in kept:
        record, _stamp, bad = read_message(msg, base_offset + msg.position.batch)
        records.append(record)
        anomalies.extend(bad)
    data = build_batch(records, last_offset=base_offset + entry.count - 1)
    max_ts = max(r.timestamp for r in records)
    return Entry(entry.count, max_ts, data, (), tuple(sorted(set(anomalies))))


def _nothing_kept(entry: StoredEntry, base_offset: int) -> Entry:
    """An entry compaction emptied (Pulsar drops those) serves nothing and still
    takes its offsets; a layout that does not parse is served as the live log
    serves it."""
    if batch_layout.messages(entry, compacted_out=True):
        return Entry(entry.count, -1, b"", (), ("batch",))
    return entries.decode(entry, base_offset)
