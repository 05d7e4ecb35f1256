"""What operators see of a member's assignment: the consumer protocol's bytes as
a real client (kafka-python's encoder) writes them, read back exactly."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.abstract import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from kop.groups.consumer_protocol import assigned_partitions, subscribed_topics

topics = st.dictionaries(
    st.text(min_size=1, max_size=20),
    st.lists(st.integers(0, 2**31 - 1), max_size=8),
    max_size=5,
)


@given(assignment=topics, version=st.integers(0, 3), user_data=st.binary(max_size=16))
def test_assignments_written_by_a_client_read_back_exactly(
    assignment: dict[str, list[int]], version: int, user_data: bytes
) -> None:
    data = ConsumerProtocolAssignment(version, sorted(assignment.items()), user_data).encode()
    assert assigned_partitions(data) == assignment


@given(data=st.binary(max_size=64))
def test_other_bytes_give_none_or_a_reading_never_an_error(data: bytes) -> None:
    got = assigned_partitions(data)
    assert got is None or isinstance(got, dict)


@given(
    topics_=st.lists(st.text(min_size=1, max_size=20), max_size=6),
    version=st.integers(0, 1),
    user_data=st.binary(max_size=16),
)
def test_subscriptions_written_by_a_client_read_back_exactly(
    topics_: list[str], version: int, user_data: bytes
) -> None:
    args: list[object] = [version, topics_, user_data]
    if version >= 1:
        args.append([(t, [0]) for t in topics_[:1]])  # owned partitions (v1+)
    data = ConsumerProtocolSubscription(*args).encode()
    assert subscribed_topics(data) == topics_


def test_negative_lengths_and_counts_are_not_a_reading() -> None:
    """A name of length -1 (null: no topic is) or a count below -1; before, a negative
    length stepped the reader backwards onto bytes it had read."""
    one_topic = struct.pack(">hi", 0, 1)
    named_t = one_topic + struct.pack(">h", 1) + b"t"
    assert assigned_partitions(one_topic + struct.pack(">hi", -1, 0)) is None
    assert assigned_partitions(named_t + struct.pack(">i", -2)) is None
    assert assigned_partitions(struct.pack(">hi", 0, -2)) is None
    assert subscribed_topics(one_topic + struct.pack(">h", -2)) is None
    assert subscribed_topics(struct.pack(">hi", 0, 2**31 - 1) + struct.pack(">h", 0)) is None
    # a null array (-1) reads as empty, as Kafka's own readers take it
    assert assigned_partitions(named_t + struct.pack(">i", -1)) == {"t": []}
