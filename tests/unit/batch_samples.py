"""Damaged input shared by the tests that hold kop's readers (Python and native) to
what a malformed payload or reserved property means: one small idempotent Kafka
batch with its damaged variants, and headers properties that are not kop's."""

from __future__ import annotations

from hypothesis import strategies as st

from kop.protocol.records import Record, build_batch

BATCH = build_batch(
    [Record(0, 10, b"k", b"v"), Record(1, 20, None, b"w")],
    producer_id=9,
    producer_epoch=1,
    base_sequence=4,
)


def _mutated(at: int, byte: int, length: int) -> bytes:
    data = bytearray(BATCH[:length])
    if at < len(data):
        data[at] = byte
    return bytes(data)


# BATCH itself, or cut short and/or with one byte changed
batch_payloads = st.one_of(
    st.just(BATCH),
    st.builds(
        _mutated,
        st.integers(0, len(BATCH) - 1),
        st.integers(0, 255),
        st.integers(0, len(BATCH) + 1),
    ),
)


# `__kafka.headers` values no kop wrote: not JSON, not a list of [name, base64|null] pairs
MALFORMED_HEADERS = [
    "not json",
    '{"a": "YQ=="}',
    '[["a"]]',
    '[["a", "YQ==", "x"]]',
    '[[1, "YQ=="]]',
    '[["a", 5]]',
    '[["a", "***"]]',
    '[["\\ud800", null]]',  # a lone surrogate cannot be sent as UTF-8
]
