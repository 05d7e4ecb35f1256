"""Settings of the partition log (filled from kop's config by the composition root)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogSettings:
    checkpoint_interval: int = 1000
    max_checkpoints: int = 10_000  # per partition; thinned beyond
    # A partition's mark and producer snapshots alone (no new checkpoint) are persisted
    # at most this often: a restart or a new owner counts on from the last checkpoint
    # either way, and with many slow partitions a mark a second each was most of the
    # index's writes, and what a takeover had to read back (docs/benchmarks.md).
    mark_interval_s: float = 10.0
    tail_buffer_bytes: int = 256 << 20  # in total, across partitions
    write_timeout_s: float = 30.0
    open_wait_s: float = 5.0  # a request waits this long for a partition to open
    retention_check_s: float = 300.0  # how often an open partition looks for trims
    history_readers: int = 64  # kept readers for lagging consumers, in total
    history_prefetch: int = 100  # messages each history reader reads ahead
    # How often a compacted partition asks Pulsar to compact it (when it has new data).
    compaction_interval_s: float = 60.0
    max_producers: int = 10_000  # idempotent producers remembered per partition
    # ... and across one tenant's partitions on this instance (kop.log.tenant_producers)
    max_producers_per_tenant: int = 2**31 - 1
    # A `pulsar`-format batch entry larger than this is split (Pulsar refuses entries
    # past its maxMessageSize, 5 MiB by default; the rest is room for metadata).
    max_entry_bytes: int = 4 << 20
    # What a produced batch may decompress to (MESSAGE_TOO_LARGE past it).
    max_uncompressed_batch_bytes: int = 16 << 20
