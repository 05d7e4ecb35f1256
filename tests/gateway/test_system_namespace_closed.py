"""kop's own state is not a Kafka namespace (issue 33, finding 2): under no name form
does a client read, write, describe, configure or delete a topic of the system
namespace, nor make it the namespace it works in. Before, a client read every
tenant's committed offsets, deleted kop's offsets topic (DeleteTopics answered 0)
and produced heartbeats into `kop-members` by the topics' full names."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kop.config.settings import ConfigError, load_config
from kop.security.errors import AuthenticationFailed
from kop.security.principal import select_namespace
from kop.storage.naming import InvalidTopicName, Namespace, resolve
from tests.gateway.memory_gateway import gateway_with_hot_topic

SYSTEM = "persistent://public/__kop"
OWN_STATE = [f"{SYSTEM}/consumer-offsets", f"{SYSTEM}/transaction-state", f"{SYSTEM}/kop-members",
             f"{SYSTEM}/consumer-offsets-partition-0", f"{SYSTEM}/offset-index"]  # fmt: skip


def _codes(bootstrap: str) -> dict[str, set[str]]:
    """What each API answers for each name of kop's own state."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out: dict[str, set[str]] = {}

    def code(key: str, run: object) -> None:
        try:
            run()  # type: ignore[operator]
            out.setdefault(key, set()).add("NONE")
        except KafkaException as exc:
            out.setdefault(key, set()).add(exc.args[0].name())

    for name in OWN_STATE:
        code("describe", lambda n=name: admin.describe_topics(TopicCollection([n]))[n].result(10))
        code("delete", lambda n=name: admin.delete_topics([n])[n].result(10))
        code(
            "configs",
            lambda n=name: admin.describe_configs([ConfigResource("topic", n)])[
                ConfigResource("topic", n)
            ].result(10),
        )
    code(
        "create",
        lambda: admin.create_topics([NewTopic(f"{SYSTEM}/planted", 1, 1)])[
            f"{SYSTEM}/planted"
        ].result(10),
    )
    produced: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 5000,
                         "allow.auto.create.topics": False})  # fmt: skip
    producer.produce(
        f"{SYSTEM}/kop-members",
        b'{"node_id":5}',
        key=b"5",
        on_delivery=lambda err, _m: produced.append(err.name() if err else "NONE"),
    )
    producer.flush(10)
    out["produce"] = set(produced)
    return out


async def test_no_api_reaches_kops_own_topics() -> None:
    async with gateway_with_hot_topic(1) as (gateway, backend):
        codes = await asyncio.to_thread(_codes, f"127.0.0.1:{gateway.kafka_port}")
        assert codes == {
            "describe": {"TOPIC_AUTHORIZATION_FAILED"},
            "delete": {"TOPIC_AUTHORIZATION_FAILED"},
            "configs": {"TOPIC_AUTHORIZATION_FAILED"},
            "create": {"TOPIC_AUTHORIZATION_FAILED"},
            "produce": {"TOPIC_AUTHORIZATION_FAILED"},
        }
        offsets = resolve(f"{SYSTEM}/consumer-offsets", Namespace("", ""))
        assert await backend.admin.topic_info(offsets) is not None  # still there


@pytest.mark.parametrize(
    "name",
    [
        "persistent://public/%5F%5Fkop/kop-members",  # percent-encoded
        "persistent://public/__kop%2Fx/kop-members",
        "persistent://public/../__kop/kop-members",
        "persistent://public/./kop-members",
        "persistent://publ\u0131c/__kop/kop-members",  # a letter that is not ASCII
        "persistent://public/__kop/..",
    ],
)
def test_names_that_could_be_read_as_another_namespace_are_invalid(name: str) -> None:
    with pytest.raises(InvalidTopicName):
        resolve(name, Namespace("public", "default"))


def test_other_case_is_another_namespace() -> None:
    """Pulsar's names are case-sensitive: `PUBLIC/__KOP` is not kop's namespace."""
    assert resolve("persistent://PUBLIC/__KOP/x", Namespace("a", "b")).namespace != Namespace(
        "public", "__kop"
    )


def test_a_client_cannot_choose_the_system_namespace_to_work_in() -> None:
    system = Namespace("public", "__kop")
    default = Namespace("public", "default")
    with pytest.raises(AuthenticationFailed):
        select_namespace("public/__kop", default, system)
    with pytest.raises(AuthenticationFailed):
        select_namespace("public", Namespace("x", "__kop"), system)
    assert select_namespace("acme/orders", default, system) == Namespace("acme", "orders")


def test_the_default_namespace_may_not_be_the_system_namespace() -> None:
    with pytest.raises(ConfigError, match="is system_namespace"):
        load_config(environ={}, namespace="__kop")
