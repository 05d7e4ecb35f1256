"""Topic configs are validated as Kafka 4.3.1 validates them: every config Kafka
accepts is accepted (Streams and Connect set configs that only mean something to
Kafka's storage), bad values get INVALID_CONFIG with Kafka's message (tools print
it), and values are kept in the canonical form Kafka describes them in. The
expected messages were read off the reference Kafka broker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.protocol.errors import ErrorCode, KafkaError
from kop.topics.cleanup_policy import pulsar_retention
from kop.topics.config_defs import LONG_MAX, TOPIC_CONFIGS
from kop.topics.config_types import ConfigType, java_double
from kop.topics.configs import TopicDefaults, validate_configs

DEFAULTS = TopicDefaults().configs()


def _refused(configs: dict[str, str | None]) -> str:
    with pytest.raises(KafkaError) as err:
        validate_configs(configs, DEFAULTS)
    assert err.value.code == ErrorCode.invalid_config
    assert err.value.message is not None
    return err.value.message


# What Kafka Streams (repartition and changelog topics, less compaction), Kafka
# Connect (its internal topics) and kafka-topics users set.
STREAMS_REPARTITION = {
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
    "message.timestamp.type": "CreateTime",
}
CONNECT_AND_TOOLS = {
    "segment.ms": "600000",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "2",
    "flush.messages": "1",
    "index.interval.bytes": "4096",
    "preallocate": "false",
    "file.delete.delay.ms": "60000",
    "leader.replication.throttled.replicas": "*",
    "follower.replication.throttled.replicas": "0:1,1:1",
    "local.retention.ms": "-2",
    "remote.storage.enable": "false",
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": "100",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "9223372036854775807",
    "compression.type": "zstd",
    "compression.zstd.level": "3",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "86400000",
}


@pytest.mark.parametrize("configs", [STREAMS_REPARTITION, CONNECT_AND_TOOLS])
def test_the_configs_streams_and_connect_set_are_accepted(configs: dict[str, str]) -> None:
    assert validate_configs(configs, DEFAULTS) == configs


def test_every_kafka_topic_config_is_known_and_its_default_is_valid() -> None:
    assert len(TOPIC_CONFIGS) == 33  # as Kafka 4.3.1 describes a topic
    defaults = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    assert validate_configs(defaults, DEFAULTS) == defaults


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("cleanup.policy", "foo", "Invalid value foo for configuration cleanup.policy: "
         "String must be one of: compact, delete"),
        ("cleanup.policy", "delete,", "Configuration 'cleanup.policy' values must not be empty."),
        ("cleanup.policy", None, "Null value not supported for topic configs: cleanup.policy"),
        ("compression.type", "none", "Invalid value none for configuration compression.type: "
         "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        ("compression.gzip.level", "0", "Invalid value 0 for configuration "
         "compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
        ("compression.lz4.level", "18", "Invalid value 18 for configuration "
         "compression.lz4.level: Value must be no more than 17"),
        ("delete.retention.ms", "1.5", "Invalid value 1.5 for configuration "
         "delete.retention.ms: Not a number of type LONG"),
        ("delete.retention.ms", "9223372036854775808", "Invalid value 9223372036854775808 for "
         "configuration delete.retention.ms: Not a number of type LONG"),
        ("max.message.bytes", "2147483648", "Invalid value 2147483648 for configuration "
         "max.message.bytes: Not a number of type INT"),
        ("message.timestamp.type", "logappendtime", "Invalid value logappendtime for "
         "configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
        ("min.cleanable.dirty.ratio", "Infinity", "Invalid value Infinity for configuration "
         "min.cleanable.dirty.ratio: Value must be no more than 1"),
        ("min.cleanable.dirty.ratio", "-0.1", "Invalid value -0.1 for configuration "
         "min.cleanable.dirty.ratio: Value must be at least 0"),
        ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: "
         "Value must be at least 1"),
        ("preallocate", "yes", "Invalid value yes for configuration preallocate: "
         "Expected value to be either true or false"),
        ("retention.ms", "-2", "Invalid value -2 for configuration retention.ms: "
         "Value must be at least -1"),
        ("segment.bytes", "1048575", "Invalid value 1048575 for configuration segment.bytes: "
         "Value must be at least 1048576"),
        ("leader.replication.throttled.replicas", "*,0:1", "Invalid value [*, 0:1] for "
         "configuration leader.replication.throttled.replicas: "
         "leader.replication.throttled.replicas must be the literal '*' or a list of replicas "
         "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
        ("message.timestamp.difference.max.ms", "1000",
         "Unknown topic config name: message.timestamp.difference.max.ms"),
        ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the "
         "broker. Topic cannot be configured with remote log storage."),
    ],
)  # fmt: skip
def test_bad_values_get_kafkas_message(name: str, value: str | None, message: str) -> None:
    assert _refused({name: value}) == message


def test_compaction_lags_are_checked_together() -> None:
    assert _refused({"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "10"}) == (
        "conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (10)"
    )
    validate_configs({"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "100"}, DEFAULTS)


@pytest.mark.parametrize(
    ("policy", "stored"),
    [
        ("compact", "compact"),
        ("compact,delete", "compact,delete"),
        ("delete, compact", "delete,compact"),
    ],
)
def test_compact_policies_are_accepted_in_canonical_form(policy: str, stored: str) -> None:
    assert validate_configs({"cleanup.policy": policy}, DEFAULTS)["cleanup.policy"] == stored


@pytest.mark.parametrize(
    ("name", "given", "stored"),
    [
        ("retention.ms", " 100", "100"),
        ("retention.ms", "+5", "5"),
        ("retention.ms", "-0", "0"),
        ("preallocate", "TRUE", "true"),
        ("min.cleanable.dirty.ratio", ".5", "0.5"),
        ("min.cleanable.dirty.ratio", "1e-1", "0.1"),
        ("min.cleanable.dirty.ratio", "0.5d", "0.5"),
        ("min.cleanable.dirty.ratio", "0", "0.0"),
        ("min.cleanable.dirty.ratio", "0.0001", "1.0E-4"),
        ("cleanup.policy", "delete, delete", "delete"),
        ("cleanup.policy", "", ""),
        ("follower.replication.throttled.replicas", " 0:1 , 1:2", "0:1,1:2"),
        ("message.timestamp.type", " LogAppendTime", "LogAppendTime"),
    ],
)
def test_values_are_kept_as_kafka_describes_them(name: str, given: str, stored: str) -> None:
    assert validate_configs({name: given}, DEFAULTS) == {name: stored}


_LONGS = [n for n, d in TOPIC_CONFIGS.items() if d.type == ConfigType.LONG]


@given(
    st.sampled_from(_LONGS),
    st.integers(min_value=-(1 << 63), max_value=LONG_MAX),
    st.sampled_from(["", " ", "\t", "\n "]),
)
def test_a_long_is_accepted_exactly_when_kafkas_range_allows_it(
    name: str, number: int, pad: str
) -> None:
    validator = TOPIC_CONFIGS[name].validator
    low = getattr(validator, "low", None)
    high = getattr(validator, "high", None)
    fits = (low is None or number >= low) and (high is None or number <= high)
    try:
        got = validate_configs({name: f"{pad}{number}{pad}"}, DEFAULTS)
    except KafkaError as exc:
        assert not fits
        assert exc.message == (
            f"Invalid value {number} for configuration {name}: Value must be at least {low}"
        )
    else:
        assert fits
        assert got == {name: str(number)}


@given(st.sampled_from(_LONGS), st.text(min_size=1, max_size=12))
def test_text_that_is_no_number_is_refused_as_kafka_refuses_it(name: str, text: str) -> None:
    digits = text.strip("".join(map(chr, range(0x21)))).removeprefix("+").removeprefix("-")
    if digits.isascii() and digits.isdigit():
        return  # a number (Java's Long.parseLong: a sign and ASCII digits, after trim)
    assert _refused({name: text}) == (
        f"Invalid value {text} for configuration {name}: Not a number of type LONG"
    )


@given(st.dictionaries(st.sampled_from(sorted(TOPIC_CONFIGS)), st.text(max_size=10), max_size=5))
def test_what_is_accepted_is_canonical_and_stays_so(configs: dict[str, str]) -> None:
    try:
        once = validate_configs(configs, DEFAULTS)
    except KafkaError as exc:
        assert exc.code == ErrorCode.invalid_config
        return
    assert validate_configs(once, DEFAULTS) == once


@given(st.sampled_from(["true", "false"]), st.data())
def test_booleans_ignore_case(value: str, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from([n for n, d in TOPIC_CONFIGS.items() if d.type == 1]))
    if name == "remote.storage.enable" and value == "true":
        return
    cased = "".join(c.upper() if data.draw(st.booleans()) else c for c in value)
    assert validate_configs({name: cased}, DEFAULTS) == {name: value}


@given(st.floats(min_value=0.0, max_value=1.0))
def test_a_ratio_reads_back_as_the_same_number(ratio: float) -> None:
    got = validate_configs({"min.cleanable.dirty.ratio": repr(ratio)}, DEFAULTS)
    assert float(got["min.cleanable.dirty.ratio"].replace("E", "e")) == ratio


@pytest.mark.parametrize(
    ("number", "java"),
    [(0.5, "0.5"), (1.0, "1.0"), (1e-3, "0.001"), (1e-4, "1.0E-4"), (1.5e-5, "1.5E-5"),
     (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (100.0, "100.0"), (-0.0, "-0.0")],
)  # fmt: skip
def test_doubles_are_written_as_java_writes_them(number: float, java: str) -> None:
    assert java_double(number) == java


@given(st.text(min_size=1, max_size=20).filter(lambda n: n not in TOPIC_CONFIGS))
def test_unknown_names_are_refused_as_kafka_refuses_them(name: str) -> None:
    if name.startswith("kop."):
        return
    assert _refused({name: "1"}) == f"Unknown topic config name: {name}"


@pytest.mark.parametrize(
    ("policy", "retention"),
    [
        ("delete", (5, 7)),
        ("compact,delete", (5, 7)),
        ("", (-1, -1)),
        # compact: the live ledgers stay as long as a tombstone must (D10), any size
        ("compact", (86_400_000, -1)),
    ],
)
def test_pulsar_retention_follows_the_cleanup_policy(
    policy: str, retention: tuple[int, int]
) -> None:
    configs = {**DEFAULTS, "cleanup.policy": policy, "retention.ms": "5", "retention.bytes": "7"}
    assert pulsar_retention(configs) == retention
