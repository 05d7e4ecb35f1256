"""The conformance harness's compaction helpers: when kop counts as having noted a
partition (so the live ledgers may be deleted), and what counts as a cleaned read."""

from __future__ import annotations

from typing import Any

from conformance.pulsar_admin import kop_noted
from conformance.scenarios.compaction_cleaned import cleaned, compacted


def _topics(hw: int, noted: int | None) -> dict[str, dict[str, Any]]:
    state = {"high_watermark": hw, "compaction_noted_offset": noted}
    return {"persistent://public/default/t-partition-0": state}


def test_noted_once_kops_cycle_noted_every_record_counted() -> None:
    assert kop_noted(_topics(12, 12), "t", 0)


def test_not_noted_while_kops_cycle_lags_the_records_counted() -> None:
    # Pulsar's compaction may have ended and a truncate moved kop's pin to the end:
    # neither says kop noted the survivors (conformance truncated mid-survey so once).
    assert not kop_noted(_topics(12, 11), "t", 0)


def test_not_noted_before_anything_is_written_or_elsewhere() -> None:
    assert not kop_noted(_topics(0, 0), "t", 0)
    assert not kop_noted(_topics(12, 12), "t", 1)
    assert not kop_noted(_topics(12, None), "t", 0)


def test_a_read_is_compacted_when_every_key_appears_once_and_cleaned_without_tombstones() -> None:
    one_pass = [(2, b"c", b"c1"), (4, b"b", None), (7, b"e", b"e1")]
    assert compacted(one_pass) and not cleaned(one_pass)
    assert cleaned([(2, b"c", b"c1"), (7, b"e", b"e1")])
    assert not compacted([(0, b"a", b"a1"), (3, b"a", b"a2")])
    assert not compacted("_AUTO_OFFSET_RESET") and not cleaned("_AUTO_OFFSET_RESET")
