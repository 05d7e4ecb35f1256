"""The transaction state topic's records (kop/txn/codec.py): every state a
coordinator can hold reads back as written, and any payload at all either reads as
a state or raises MalformedRecord, never anything else (the loader counts and
skips those instead of stopping)."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.txn.codec import MalformedRecord, decode, encode
from kop.txn.state import State, TxnMeta

int64 = st.integers(-(2**63), 2**63 - 1)
metas = st.builds(
    TxnMeta,
    txn_id=st.text(min_size=1),
    producer_id=int64,
    epoch=st.integers(-1, 32767),
    timeout_ms=st.integers(1, 2**31 - 1),
    state=st.sampled_from(list(State)),
    partitions=st.frozensets(st.tuples(st.text(min_size=1), st.integers(0, 2**31 - 1))),
    started_ms=int64,
    last_epoch=st.integers(-1, 32767),
    version=st.sampled_from([1, 2]),
    next_producer_id=int64,
    prev_producer_id=int64,
)


@given(meta=metas)
def test_every_state_reads_back_as_written(meta: TxnMeta) -> None:
    key, payload = encode(meta)
    assert key == meta.txn_id
    assert decode(key, payload) == meta


def test_a_record_from_before_transaction_version_2_reads_as_version_1() -> None:
    """kop wrote no `tv` nor the two ids before KIP-890 part 2: such a record, left in
    the compacted topic by an older kop, is a version-1 transaction."""
    old = {"v": 1, "producer_id": 7, "epoch": 3, "last_epoch": 2, "timeout_ms": 60000,
           "state": "Ongoing", "partitions": [["p", 0]], "started_ms": 5}  # fmt: skip
    meta = decode("t", json.dumps(old).encode())
    assert meta == TxnMeta("t", 7, 3, 60000, State.ONGOING, frozenset({("p", 0)}), 5, 2)
    assert (meta.version, meta.next_producer_id, meta.prev_producer_id) == (1, -1, -1)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)
fields = st.fixed_dictionaries(
    {"v": st.just(1)},
    optional={k: json_values for k in ("producer_id", "epoch", "last_epoch", "timeout_ms",
                                       "state", "partitions", "started_ms")},
)  # fmt: skip
payloads = st.one_of(st.binary(), json_values.map(json.dumps).map(str.encode),
                     fields.map(json.dumps).map(str.encode))  # fmt: skip


@given(payload=payloads)
def test_any_payload_reads_as_a_state_or_is_malformed(payload: bytes) -> None:
    """The loader's contract: a state, None, or MalformedRecord; never another error."""
    with contextlib.suppress(MalformedRecord):
        decoded = decode("t", payload)
        assert decoded is None or isinstance(decoded, TxnMeta)


@pytest.mark.parametrize(
    "value",
    [{"v": 2}, {"v": 1, "state": "Ongoing"}, [], "x",
     {"v": 1, "producer_id": 1, "epoch": 0, "last_epoch": -1, "timeout_ms": 1,
      "state": "Ongoing", "partitions": [["t", -1]], "started_ms": 0},
     {"v": 1, "producer_id": True, "epoch": 0, "last_epoch": -1, "timeout_ms": 1,
      "state": "Empty", "partitions": [], "started_ms": 0}],
)  # fmt: skip
def test_what_another_kop_or_a_bug_wrote_is_malformed(value: object) -> None:
    with pytest.raises(MalformedRecord):
        decode("t", json.dumps(value).encode())


def test_a_tombstone_is_no_state() -> None:
    assert decode("t", None) is None and decode("t", b"") is None
