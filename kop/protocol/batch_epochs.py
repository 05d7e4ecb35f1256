"""The partition leader epoch of record batches (bytes 12-15 of a v2 batch).

Kafka's leader stamps its epoch on every batch it appends; consumers carry the
epoch of what they read into their positions and commits, and validate those
with OffsetForLeaderEpoch (KIP-320). The field lies before the CRC'd region, so
stamping it needs no new CRC.
"""

from __future__ import annotations

import struct

BATCH_EPOCH = 0  # the partition leader epoch of every batch kop serves (kop/log/leader_epoch.py)
NO_EPOCH = -1  # "none given" in requests; "undefined" in answers

_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_HEAD = 17  # base offset, length, epoch, magic: enough to step to the next batch


def rebased(batch: bytes, base_offset: int, epoch: int) -> bytes:
    """One stored batch at `base_offset`, stamped with `epoch`: one copy."""
    with memoryview(batch) as view:
        return b"".join((_BASE_OFFSET.pack(base_offset), view[8:12], _EPOCH.pack(epoch), view[16:]))


def with_leader_epoch(data: bytes, epoch: int) -> bytes:
    """Every batch of `data` (whole batches, back to back) stamped with `epoch`: one
    copy (a bytearray and back would be two)."""
    stamp = _EPOCH.pack(epoch)
    with memoryview(data) as view:
        parts: list[bytes | memoryview] = []
        pos = 0
        while pos + _HEAD <= len(data):
            parts += (view[pos : pos + 12], stamp)
            end = pos + 12 + int.from_bytes(view[pos + 8 : pos + 12], "big")
            parts.append(view[pos + 16 : end])
            pos = end
        parts.append(view[pos:])
        return b"".join(parts)
