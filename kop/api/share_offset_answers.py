"""The answers of the share-group offset APIs (kop/api/share_offsets.py), built from
what each partition's part came to: a start offset and lag, or the error it met."""

from __future__ import annotations

from kio.schema.alter_share_group_offsets.v0.response import (
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)
from kio.schema.delete_share_group_offsets.v0.response import (
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
)
from kio.schema.describe_share_group_offsets.v1.response import (
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from kop.groups.share.offsets import ShareTarget
from kop.groups.share.state import StartOffset
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.values import NO_THROTTLE
from kop.topics.catalog import TopicView

NO_OFFSETS = KafkaError(
    ErrorCode.unknown_topic_or_partition, "There is no offset information to delete."
)


def target(view: TopicView, index: int) -> ShareTarget:
    return ShareTarget(
        view.topic.full, index, view.partition_topic(index), view.compacted,
        view.compacted_expire_ms,
    )  # fmt: skip


def described_topic(
    name: str, view: TopicView | None, outcome: dict[int, StartOffset | KafkaError]
) -> DescribeShareGroupOffsetsResponseTopic:
    partitions = []
    for index, o in sorted(outcome.items()):
        if isinstance(o, KafkaError):
            partitions.append(DescribeShareGroupOffsetsResponsePartition(
                partition_index=i32(index), start_offset=i64(-1), leader_epoch=i32(0),
                lag=i64(-1), error_code=o.code, error_message=o.message,
            ))  # fmt: skip
        else:
            partitions.append(DescribeShareGroupOffsetsResponsePartition(
                partition_index=i32(index), start_offset=i64(o.start_offset),
                leader_epoch=i32(o.leader_epoch), lag=i64(o.lag), error_code=ErrorCode.none,
            ))  # fmt: skip
    return DescribeShareGroupOffsetsResponseTopic(
        topic_name=TopicName(name),
        topic_id=view.topic_id if view is not None else None,
        partitions=tuple(partitions),
    )


def described_group(
    group_id: GroupId, topics: list[DescribeShareGroupOffsetsResponseTopic],
    error: KafkaError | None = None,
) -> DescribeShareGroupOffsetsResponseGroup:  # fmt: skip
    return DescribeShareGroupOffsetsResponseGroup(
        group_id=group_id, topics=tuple(topics),
        error_code=error.code if error else ErrorCode.none,
        error_message=error.message if error else None,
    )  # fmt: skip


Altered = tuple[str, TopicView | None, dict[int, KafkaError | None]]


def altered(
    topics: list[Altered], error: KafkaError | None = None
) -> AlterShareGroupOffsetsResponse:
    responses = tuple(
        AlterShareGroupOffsetsResponseTopic(
            topic_name=TopicName(name),
            topic_id=view.topic_id if view is not None else None,
            partitions=tuple(
                AlterShareGroupOffsetsResponsePartition(
                    partition_index=i32(index),
                    error_code=e.code if e else ErrorCode.none,
                    error_message=e.message if e else None,
                )
                for index, e in sorted(result.items())
            ),
        )
        for name, view, result in topics
    )
    return AlterShareGroupOffsetsResponse(
        throttle_time=NO_THROTTLE, error_code=error.code if error else ErrorCode.none,
        error_message=error.message if error else None, responses=responses,
    )  # fmt: skip


Deleted = tuple[str, TopicView | None, KafkaError | None]


def deleted(
    topics: list[Deleted], error: KafkaError | None = None
) -> DeleteShareGroupOffsetsResponse:
    return DeleteShareGroupOffsetsResponse(
        throttle_time=NO_THROTTLE, error_code=error.code if error else ErrorCode.none,
        error_message=error.message if error else None,
        responses=tuple(
            DeleteShareGroupOffsetsResponseTopic(
                topic_name=TopicName(name), topic_id=view.topic_id if view is not None else None,
                error_code=e.code if e else ErrorCode.none, error_message=e.message if e else None,
            )
            for name, view, e in topics
        ),
    )  # fmt: skip
