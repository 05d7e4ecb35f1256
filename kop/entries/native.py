"""The optional native kernels (`kop_native`, a Rust extension built by `make`).

They do the two per-record loops of the `pulsar` entry format in one call per
entry, byte for byte what the Python twins in `kop.entries.codec` do (tests hold
them to it). Without the extension, or with `KOP_NATIVE=0`, kop runs the Python
twins: the same results, slower.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Protocol

log = logging.getLogger(__name__)

# (producer id, epoch, first sequence, count, index, offset of its record)
NativeStamp = tuple[int, int, int, int, int, int]


class Kernels(Protocol):
    def records_to_layouts(
        self, records: bytes, count: int, base_timestamp: int, first_index: int, max_bytes: int,
        extra: tuple[str, str] | None = None,
    ) -> list[tuple[bytes, int]]:  # fmt: skip
        """Records `first_index ..` of a Kafka batch's (decompressed) records section
        as batch layouts of at most `max_bytes` each: (layout, records in it);
        `extra`, a (name, value) property every record's message gets."""
        ...

    def records_to_framed_layouts(
        self, records: bytes, count: int, base_timestamp: int, first_index: int, max_bytes: int,
        extra: tuple[str, str] | None, versions: dict[int, int],
        tails: dict[int, bytes] | None = None,
    ) -> tuple[list[tuple[bytes, int, int | None]], list[int]]:  # fmt: skip
        """`records_to_layouts`, values in Confluent's framing whose id `versions` maps
        stored bare (and without what `tails` says follows the id: a Protobuf root's
        message indexes), a layout per run of one version: ([(layout, records,
        version)], ids of framed-looking values it did not know)."""
        ...

    def decode_layout(
        self, layout: bytes, count: int, base_offset: int, publish_time: int
    ) -> tuple[int, int, bytes, list[NativeStamp], list[str]]:
        """A batch entry's (records, max timestamp, Kafka batches at `base_offset`,
        stamps, malformed reserved property names)."""
        ...


@functools.cache
def native() -> Kernels | None:
    if os.environ.get("KOP_NATIVE", "1") == "0":
        log.info("KOP_NATIVE=0: the pulsar entry format runs its Python kernels")
        return None
    try:
        import kop_native  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        log.warning(
            "kop_native is not installed (no cargo when kop was set up): the pulsar entry "
            "format runs its Python kernels, several times slower"
        )
        return None
    if not getattr(kop_native, "FRAMING_TAILS", False):
        log.warning("kop_native is older than this kop (run `make`): its Python kernels run")
        return None
    kernels: Kernels = kop_native
    return kernels
