"""A share group's records in the offsets topic (kop/groups/share/stored.py): what is
written reads back as the same group, and a value damaged anywhere is a MalformedRecord
or a valid record, never a crash (the loader skips and counts what it cannot read)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kop.groups.consumer.group import TopicMeta
from kop.groups.offsets_codec import decode
from kop.groups.record_json import MalformedRecord
from kop.groups.share.group import ShareGroup, ShareMember
from kop.groups.share.stored import LoadedShareGroups, changes, snapshot, tombstones

T1 = uuid.UUID(int=1)


def _group() -> ShareGroup:
    a = ShareMember("a|1", 3, ("t1",), None, "c", "/127.0.0.1", {T1: frozenset({0, 2})}, 99)
    b = ShareMember("b%", 3, ("t1",), "r1", "c", "/127.0.0.1", {T1: frozenset({1})}, 99)
    return ShareGroup(
        "g|x", epoch=3, assignment_epoch=3, members={"a|1": a, "b%": b},
        topics={"t1": TopicMeta(T1, "t1", 3)}, targets={"a|1": a.assignment, "b%": b.assignment},
        offset_topics={"t0"},
    )  # fmt: skip


def _loaded(messages: list[Any]) -> LoadedShareGroups:
    loaded = LoadedShareGroups()
    for m in messages:
        loaded.apply(decode(m.partition_key, m.payload))  # type: ignore[arg-type]
    return loaded


def test_what_is_written_reads_back_as_the_same_group_and_tombstones_remove_it() -> None:
    g = _group()
    written = changes(None, g)
    (back,) = _loaded(written).groups(lambda _g, _m: 7)
    assert snapshot(back) == snapshot(g)
    assert all(m.deadline_ms == 7 for m in back.members.values())  # sessions start anew
    assert _loaded([*written, *tombstones(g)]).groups(lambda _g, _m: 0) == []


def test_a_heartbeat_that_moves_only_a_deadline_writes_nothing() -> None:
    g = _group()
    before = snapshot(g)
    g.members["a|1"] = dataclasses.replace(g.members["a|1"], deadline_ms=12345)
    assert changes(before, g) == []


@given(st.sampled_from([0, 1, 2]), st.data())
def test_a_value_damaged_anywhere_is_malformed_or_valid_never_a_crash(
    which: int, data: st.DataObject
) -> None:
    msg = changes(None, _group())[which]
    assert msg.partition_key is not None and msg.payload is not None
    value = json.loads(msg.payload)
    name = data.draw(st.sampled_from(sorted(value)))
    value[name] = data.draw(
        st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers()),
                  st.dictionaries(st.text(max_size=3), st.integers()))
    )  # fmt: skip
    with contextlib.suppress(MalformedRecord):
        decode(msg.partition_key, json.dumps(value).encode())
