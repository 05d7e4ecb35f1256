"""The conformance harness's compaction helpers: when kop counts as having noted a
partition (so the live ledgers may be deleted), and what counts as a cleaned read."""

from __future__ import annotations

from typing import Any

from conformance.pulsar_admin import noted
from conformance.scenarios.compaction_cleaned import cleaned, compacted


def _stats(last: str, pin: tuple[str, str], compactor: tuple[str, str] | None) -> dict[str, Any]:
    cursors = {"kop-compaction": {"markDeletePosition": pin[0], "readPosition": pin[1]}}
    if compactor is not None:
        cursors["__compaction"] = {"markDeletePosition": compactor[0], "readPosition": compactor[1]}
    return {"lastConfirmedEntry": last, "cursors": cursors}


def test_noted_once_pulsar_compacted_and_kop_placed_its_pin_at_the_last_entry() -> None:
    assert noted(_stats("94:1", ("94:0", "94:1"), ("94:1", "94:2")))


def test_not_noted_while_kop_has_not_moved_its_pin() -> None:
    assert not noted(_stats("94:1", ("93:-1", "94:0"), ("94:1", "94:2")))


def test_not_noted_after_a_truncate_and_a_new_write_before_any_compaction() -> None:
    # truncate moved every cursor past ledger 94; the write at 99:0 is where the pin reads
    assert not noted(_stats("99:0", ("94:1", "99:0"), ("94:1", "99:0")))


def test_not_noted_before_the_first_compaction() -> None:
    assert not noted(_stats("94:1", ("94:0", "94:1"), None))


def test_a_read_is_compacted_when_every_key_appears_once_and_cleaned_without_tombstones() -> None:
    one_pass = [(2, b"c", b"c1"), (4, b"b", None), (7, b"e", b"e1")]
    assert compacted(one_pass) and not cleaned(one_pass)
    assert cleaned([(2, b"c", b"c1"), (7, b"e", b"e1")])
    assert not compacted([(0, b"a", b"a1"), (3, b"a", b"a2")])
    assert not compacted("_AUTO_OFFSET_RESET") and not cleaned("_AUTO_OFFSET_RESET")
