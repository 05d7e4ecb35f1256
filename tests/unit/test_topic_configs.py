"""Per-topic configs a client may set at creation: `kop.pulsar.batching` decides
whether Pulsar's subscription backlog can be the Kafka lag, so a typo must not
silently leave batching on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import TopicInfo
from kop.topics.catalog import TopicDefaults, TopicView, validate_configs
from kop.topics.configs import APPEND, DELETE, SET, SUBTRACT, incremental


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


DEFAULTS = TopicDefaults().configs()


def test_incremental_set_and_delete_return_to_the_default() -> None:
    changed = incremental({}, DEFAULTS, [("retention.ms", SET, "60000")])
    assert changed == {"retention.ms": "60000"}
    assert incremental(changed, DEFAULTS, [("retention.ms", DELETE, None)]) == {}
    # Deleting what was never set (even an unknown name) is no error, as on Kafka.
    assert incremental({}, DEFAULTS, [("no.such.config", DELETE, None)]) == {}


def test_append_and_subtract_work_on_list_configs_only() -> None:
    both = incremental({}, DEFAULTS, [("cleanup.policy", APPEND, "compact")])
    assert both == {"cleanup.policy": "delete,compact"}
    again = incremental(both, DEFAULTS, [("cleanup.policy", APPEND, "compact")])
    assert again == both
    assert incremental(both, DEFAULTS, [("cleanup.policy", SUBTRACT, "delete")]) == {
        "cleanup.policy": "compact",
    }
    # Subtracting every item leaves an explicit empty list (Kafka: nothing expires).
    assert incremental({}, DEFAULTS, [("cleanup.policy", SUBTRACT, "delete")]) == {
        "cleanup.policy": ""
    }
    with pytest.raises(KafkaError) as err:
        incremental({}, DEFAULTS, [("retention.ms", APPEND, "5")])
    assert err.value.code == ErrorCode.invalid_config
    assert err.value.message == "Can't APPEND to key retention.ms because its type is not LIST."


def test_set_without_a_value_is_an_invalid_request_as_on_kafka() -> None:
    with pytest.raises(KafkaError) as err:
        incremental({}, DEFAULTS, [("retention.ms", SET, None)])
    assert err.value.code == ErrorCode.invalid_request
    assert err.value.message == "Null value not supported for : retention.ms"


@given(st.lists(st.tuples(st.sampled_from(sorted(DEFAULTS)), st.text(max_size=8)), max_size=6))
def test_deleting_every_set_config_gives_the_defaults_back(sets: list[tuple[str, str]]) -> None:
    changed = incremental({}, DEFAULTS, [(name, SET, value) for name, value in sets])
    assert incremental(changed, DEFAULTS, [(name, DELETE, None) for name, _ in sets]) == {}


def test_a_malformed_stored_config_fails_only_what_reads_it() -> None:
    """Configs are Pulsar topic properties, which a Pulsar admin can set to anything:
    the topic is still described (and deleted, listed, altered back); only what reads
    the bad value fails."""
    view = _view({"kop.entry.format": "neither", "max.message.bytes": "lots"})
    assert view.partitions == 1 and not view.compacted
    with pytest.raises(ValueError):
        _ = view.entry_format
    with pytest.raises(ValueError):
        _ = view.max_message_bytes
