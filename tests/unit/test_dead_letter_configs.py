"""The configs of a share group's dead-letter queue (KIP-1191, after Kafka 4.3): the
group's topic name is a legal topic name or empty, its copy flag a boolean; a topic's
opt-in is a boolean its DescribeConfigs shows only where it was set, so a topic's
description stays Kafka 4.3.1's otherwise."""

from __future__ import annotations

import pytest

from kop.api.configs import topic_entries
from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.group_configs import DLQ_COPY, DLQ_TOPIC, broker_wide, checked
from kop.groups.share.coordinator import ShareSettings
from kop.protocol.errors import ErrorCode, KafkaError
from kop.topics.configs import DLQ_ENABLE, TopicDefaults, validate_configs


def test_a_group_names_its_topic_and_whether_records_are_copied() -> None:
    got = checked({DLQ_TOPIC: " dlq.orders ", DLQ_COPY: "TRUE"})
    assert got == {DLQ_TOPIC: "dlq.orders", DLQ_COPY: "true"}
    settings = broker_wide(ConsumerSettings(), ShareSettings()).overridden(got)
    assert (settings.dlq_topic, settings.dlq_copy) == ("dlq.orders", True)
    assert checked({DLQ_TOPIC: ""}) == {DLQ_TOPIC: ""}  # empty: no dead-letter topic


@pytest.mark.parametrize("name", ["a b", "x" * 250, "persistent://t/n/dlq", "dlq/x"])
def test_a_name_no_topic_could_have_is_refused(name: str) -> None:
    with pytest.raises(KafkaError) as refused:
        checked({DLQ_TOPIC: name})
    assert refused.value.code == ErrorCode.invalid_config
    assert len(refused.value.message or "") < 300  # an overlong value is not echoed whole


def test_a_topics_opt_in_is_shown_only_where_set() -> None:
    defaults = TopicDefaults().configs()
    assert DLQ_ENABLE not in {e.name for e in topic_entries(defaults, {}, defaults)}
    explicit = validate_configs({DLQ_ENABLE: "True"}, defaults)
    assert explicit == {DLQ_ENABLE: "true"}
    shown = {e.name: e.value for e in topic_entries({**defaults, **explicit}, explicit, defaults)}
    assert shown[DLQ_ENABLE] == "true"
    with pytest.raises(KafkaError):
        validate_configs({DLQ_ENABLE: "yes"}, defaults)
