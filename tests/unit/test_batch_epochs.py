"""Stamping the partition leader epoch on served batches changes bytes 12-15 of
each batch and nothing else, so CRCs stay valid and a trailing partial batch is
left as it is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kop.protocol.batch_epochs import rebased, with_leader_epoch
from kop.protocol.records import Record, build_batch, iter_batches, with_base_offset

values = st.lists(st.binary(max_size=300), min_size=1, max_size=5)


def _batch(vals: list[bytes], base: int) -> bytes:
    return build_batch([Record(base + i, 1_700_000_000_000, None, v) for i, v in enumerate(vals)])


@given(batches=st.lists(values, min_size=1, max_size=4), epoch=st.integers(-1, 2**31 - 1),
       tail=st.binary(max_size=16))  # fmt: skip
def test_only_each_batchs_epoch_changes(
    batches: list[list[bytes]], epoch: int, tail: bytes
) -> None:
    parts, base = [], 0
    for vals in batches:
        parts.append(_batch(vals, base))
        base += len(vals)
    data = b"".join(parts) + tail[:16]  # a partial batch is shorter than a header
    out = with_leader_epoch(data, epoch)
    assert len(out) == len(data)
    pos = 0
    for part in parts:
        got = out[pos : pos + len(part)]
        assert got[:12] == part[:12] and got[16:] == part[16:]
        assert int.from_bytes(got[12:16], "big", signed=True) == epoch
        pos += len(part)
    assert out[pos:] == data[pos:]
    read = list(iter_batches(out[:pos]))  # CRCs still hold
    assert [r.value for r in read] == [v for vals in batches for v in vals]


@given(vals=values, base=st.integers(0, 2**40), epoch=st.integers(-1, 2**31 - 1))
def test_rebased_is_with_base_offset_then_the_epoch(
    vals: list[bytes], base: int, epoch: int
) -> None:
    batch = _batch(vals, 0)
    assert rebased(batch, base, epoch) == with_leader_epoch(with_base_offset(batch, base), epoch)
