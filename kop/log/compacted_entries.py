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

from kop.log import entries
from kop.log.entries import Entry
from kop.log.entry_format import read_message
from kop.protocol.records import Record, build_batch
from kop.storage import batch_layout
from kop.storage.types import StoredEntry


def decode(entry: StoredEntry, base_offset: int) -> Entry:
    """The entry at `base_offset` without what compaction removed. Never raises."""
    if entry.message is not None:
        return entries.decode(entry, base_offset)  # a whole entry survives whole
    messages = batch_layout.messages(entry, compacted_out=True)
    if not any(m.compacted_out for m in messages):
        return entries.decode(entry, base_offset)
    kept: list[Record] = []
    anomalies: list[str] = []
    for index, msg in enumerate(messages):
        if msg.compacted_out:
            continue
        record, _stamp, bad = read_message(msg, base_offset + index)
        kept.append(record)
        anomalies.extend(bad)
    count = len(messages)
    if not kept:
        # Pulsar drops an entry compaction emptied; one that says otherwise serves
        # nothing and still takes its offsets.
        return Entry(count, -1, b"", (), ("batch",))
    data = build_batch(kept, last_offset=base_offset + count - 1)
    max_ts = max(r.timestamp for r in kept)
    return Entry(count, max_ts, data, (), tuple(sorted(set(anomalies))))
