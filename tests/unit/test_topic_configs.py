"""Per-topic configs a client may set at creation: `kop.pulsar.batching` decides
whether Pulsar's subscription backlog can be the Kafka lag, so a typo must not
silently leave batching on."""

from __future__ import annotations

import pytest

from kop.log.topics import TopicDefaults, TopicView, validate_configs
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import TopicInfo


def _view(configs: dict[str, str]) -> TopicView:
    topic = PulsarTopic(Namespace("public", "default"), "t", "t")
    return TopicView(topic, TopicInfo(partitions=1), configs)


@pytest.mark.parametrize("value", ["true", "false"])
def test_pulsar_batching_is_accepted_and_read_back(value: str) -> None:
    configs = validate_configs({"kop.pulsar.batching": value})
    assert _view(configs).pulsar_batching is (value == "true")


@pytest.mark.parametrize("value", ["yes", "False", "0", ""])
def test_pulsar_batching_refuses_anything_but_true_or_false(value: str) -> None:
    with pytest.raises(KafkaError) as err:
        validate_configs({"kop.pulsar.batching": value})
    assert err.value.code == ErrorCode.invalid_config


def test_new_topics_carry_the_configured_default() -> None:
    assert TopicDefaults().configs()["kop.pulsar.batching"] == "true"
    unbatched = TopicDefaults(pulsar_batching=False).configs()
    assert _view(unbatched).pulsar_batching is False
    assert _view({}).pulsar_batching is True  # a topic made by a Pulsar client
