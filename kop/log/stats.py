"""Counters the log keeps about what it met, per partition and in total (the ops
layer turns them into metrics; the log itself knows nothing of Prometheus)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class LogStats:
    malformed: int = 0  # messages with malformed `__kafka.*` properties, served by fallbacks
    trims: int = 0  # times counting met data deleted under it (retention, truncation)
    conflicts: int = 0  # persisted index entries found disagreeing with the count (healed)
    index_write_failures: int = 0  # index writes that failed or timed out (retried)
    history_readers: int = 0  # Pulsar readers opened for reads behind the tail
    counted_from_receipts: int = 0  # own entries counted from their receipts, not read back
    counted_from_reads: int = 0  # entries the tail follower read from the log
    compactions: int = 0  # compaction cycles done (Pulsar compacted, survivors noted)
    compaction_failures: int = 0  # cycles that failed (the next one repeats it)
    compaction_unknown_entries: int = 0  # surviving entries whose offset was not found
    compacted_readers: int = 0  # Pulsar readers opened on a compacted view
    parent: LogStats | None = None

    def add(self, name: str, n: int = 1) -> None:
        setattr(self, name, getattr(self, name) + n)
        if self.parent is not None:
            self.parent.add(name, n)
