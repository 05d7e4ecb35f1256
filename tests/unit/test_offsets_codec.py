"""The offsets topic's records: whatever the coordinator stores reads back the
same (any names, '|' included), and nothing found in the topic can make
decoding fail other than with MalformedRecord (a load skips and counts those)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.groups.offsets_codec import (
    GroupRecord,
    MalformedRecord,
    OffsetRecord,
    decode,
    encode_group,
    encode_offset,
    group_key,
    offset_key,
    tombstone_group,
    tombstone_offset,
)
from kop.groups.types import CommittedOffset, GroupMetadata, MemberMetadata, TopicPartition
from kop.storage.types import OutgoingMessage

# Text as Kafka clients send it (valid UTF-8), rich in the characters keys escape.
names = st.text(st.sampled_from("ab|%7C25-_.é") | st.characters(codec="utf-8"), max_size=20)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
partitions = st.integers(0, 2**31 - 1)
topic_partitions = st.builds(TopicPartition, names, partitions)
committed = st.builds(
    CommittedOffset,
    offset=int64,
    leader_epoch=int32,
    metadata=st.none() | st.text(),
    commit_ms=int64,
    expire_ms=st.none() | int64,
)
members = st.builds(
    MemberMetadata,
    member_id=names,
    group_instance_id=st.none() | names,
    client_id=st.text(),
    client_host=st.text(),
    session_timeout_ms=int32,
    rebalance_timeout_ms=int32,
    protocols=st.lists(st.tuples(st.text(), st.binary()), max_size=3).map(tuple),
    assignment=st.binary(),
)
groups = st.builds(
    GroupMetadata,
    group_id=names,
    protocol_type=st.none() | st.text(),
    generation=int32,
    protocol=st.none() | st.text(),
    leader=st.none() | names,
    state_ms=int64,
    members=st.lists(members, max_size=3).map(tuple),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def _decode(msg: OutgoingMessage) -> OffsetRecord | GroupRecord:
    assert msg.partition_key is not None
    return decode(msg.partition_key, msg.payload)


@given(names, topic_partitions, committed)
def test_committed_offsets_round_trip(
    group: str, tp: TopicPartition, offset: CommittedOffset
) -> None:
    assert _decode(encode_offset(group, tp, offset)) == OffsetRecord(group, tp, offset)


@given(groups)
def test_group_metadata_round_trips(meta: GroupMetadata) -> None:
    assert _decode(encode_group(meta)) == GroupRecord(meta.group_id, meta)


@given(names, topic_partitions)
def test_tombstones_decode_as_tombstones_of_their_key(group: str, tp: TopicPartition) -> None:
    assert _decode(tombstone_offset(group, tp)) == OffsetRecord(group, tp, None)
    assert _decode(tombstone_group(group)) == GroupRecord(group, None)
    # Pulsar's compaction forgets a key whose payload is empty, too.
    assert decode(offset_key(group, tp), b"") == OffsetRecord(group, tp, None)
    assert decode(group_key(group), b"") == GroupRecord(group, None)


@given(names, names, topic_partitions, topic_partitions)
def test_distinct_records_have_distinct_keys(
    g1: str, g2: str, tp1: TopicPartition, tp2: TopicPartition
) -> None:
    """Compaction keeps one record per key: two different things must never share one."""
    assert (offset_key(g1, tp1) == offset_key(g2, tp2)) == ((g1, tp1) == (g2, tp2))
    assert (group_key(g1) == group_key(g2)) == (g1 == g2)
    assert offset_key(g1, tp1) != group_key(g2)


def test_keys_and_values_read_plainly_in_pulsar_tools() -> None:
    msg = encode_offset("billing", TopicPartition("orders|eu", 3), CommittedOffset(42, 5, "m", 7))
    assert msg.partition_key == "o|billing|orders%7Ceu|3"
    assert msg.payload is not None
    assert json.loads(msg.payload) == {
        "v": 1,
        "offset": 42,
        "leader_epoch": 5,
        "metadata": "m",
        "commit_ms": 7,
        "expire_ms": None,
    }
    member = MemberMetadata("m-1", None, "c", "/h", 10, 20, (("range", b"\x00\x01"),), b"\xff")
    group = encode_group(GroupMetadata("100%", "consumer", 3, "range", "m-1", 9, (member,)))
    assert group.partition_key == "g|100%25"
    assert group.payload is not None
    value = json.loads(group.payload)
    assert value["members"][0]["protocols"] == [["range", "AAE="]]
    assert value["members"][0]["assignment"] == "/w=="


@given(names, topic_partitions, st.binary(min_size=1))
def test_garbage_payloads_raise_only_malformed_record(
    group: str, tp: TopicPartition, payload: bytes
) -> None:
    for key in (offset_key(group, tp), group_key(group)):
        with pytest.raises(MalformedRecord):
            decode(key, payload)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value, as the keys and indexes leading to it."""
    found = [at]
    if isinstance(value, dict | list):
        for k, x in value.items() if isinstance(value, dict) else enumerate(value):
            found += _paths(x, (*at, k))
    return found


@given(st.booleans(), committed, groups, st.data())
def test_a_value_damaged_anywhere_is_malformed_or_valid_never_a_crash(
    is_offset: bool, offset: CommittedOffset, meta: GroupMetadata, data: st.DataObject
) -> None:
    msg = encode_offset("g", TopicPartition("t", 0), offset) if is_offset else encode_group(meta)
    assert msg.partition_key is not None and msg.payload is not None
    value = json.loads(msg.payload)
    path = data.draw(st.sampled_from(_paths(value)[1:]))
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    dropped_field = data.draw(st.booleans())
    if dropped_field:
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(json_values)
    try:
        decode(msg.partition_key, json.dumps(value).encode())
    except MalformedRecord:
        return
    # every field is required: a missing one is never quietly defaulted
    assert not (dropped_field and isinstance(parent, dict))


VALID_OFFSET = (
    b'{"v":1,"offset":1,"leader_epoch":-1,"metadata":null,"commit_ms":0,"expire_ms":null}'
)


@given(st.text(), st.sampled_from([VALID_OFFSET, b"", None]))
def test_any_key_decodes_or_is_malformed(key: str, payload: bytes | None) -> None:
    try:
        record = decode(key, payload)
    except MalformedRecord:
        return
    again = (
        offset_key(record.group, record.tp)
        if isinstance(record, OffsetRecord)
        else group_key(record.group)
    )
    assert again == key  # only the canonical spelling of a key is accepted


@pytest.mark.parametrize(
    "key",
    [
        "",
        "g",
        "x|a",
        "g|a|b",
        "o|a|t",
        "o|a|t|007",
        "o|a|t|-0",
        "o|a|t|1.0",
        "o|a|t| 1",
        "o|a%|t|1",
        "o|a%7c|t|1",
        "g|%41",
    ],
)
def test_keys_not_as_written_are_malformed(key: str) -> None:
    with pytest.raises(MalformedRecord):
        decode(key, None)


@pytest.mark.parametrize(
    "payload",
    [
        b"[]",
        b"1",
        b"\xff",
        b'{"v": 2, "offset": 1}',
        b'{"offset": 1}',
        b"[" * 100_000,
        b'{"v":1,"offset":1.0,"leader_epoch":-1,"metadata":"","commit_ms":0,"expire_ms":null}',
        b'{"v":true,"offset":1,"leader_epoch":-1,"metadata":"","commit_ms":0,"expire_ms":null}',
        b'{"v":1,"offset":1,"leader_epoch":-1,"metadata":5,"commit_ms":0,"expire_ms":null}',
        # numbers an OffsetFetch could not answer: past int64, an epoch past int32
        b'{"v":1,"offset":9223372036854775808,"leader_epoch":-1,"metadata":"","commit_ms":0,'
        b'"expire_ms":null}',
        b'{"v":1,"offset":1,"leader_epoch":2147483648,"metadata":"","commit_ms":0,'
        b'"expire_ms":null}',
        pytest.param(
            b'{"v":1,"offset":1,"leader_epoch":-1,"metadata":"","commit_ms":' + b"9" * 4000 + b","
            b'"expire_ms":null}',
            id="commit_ms-of-4000-digits",
        ),
    ],
)
def test_offset_values_of_the_wrong_shape_are_malformed(payload: bytes) -> None:
    with pytest.raises(MalformedRecord):
        decode("o|g|t|0", payload)
