"""What the Java console producer's refused send is observed as: the broker's refusal,
not a follow-on failure the client sometimes prints after it (the difference between
two runs against the same Kafka)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.clients.base import ClientError
from conformance.clients.java_tools import ToolRun
from conformance.clients.sasl import JavaSasl, Login

REFUSED = (
    "org.apache.kafka.common.errors.TopicAuthorizationException: "
    "Not authorized to access topics: [authz]"
)
FOLLOW_ON = (
    "java.lang.IllegalStateException: Transactional method invoked on a non-transactional producer."
)


class _Tools:
    def __init__(self, run: ToolRun) -> None:
        self._run = run

    def run(self, *args: Any, **kwargs: Any) -> ToolRun:
        return self._run


def _produce_error(lines: list[str]) -> str:
    client = JavaSasl(_Tools(ToolRun(1, lines)))  # type: ignore[arg-type]
    login = Login("localhost:1", "/nonexistent/ca.pem", "alice", "secret", "PLAIN")
    with pytest.raises(ClientError) as raised:
        client.produce(None, login, "authz", ["a"])  # type: ignore[arg-type]
    return raised.value.name


def test_a_refused_send_is_observed_as_the_refusal_alone() -> None:
    assert _produce_error([REFUSED, FOLLOW_ON]) == _produce_error([REFUSED]) == REFUSED


def test_each_distinct_failure_is_kept_in_order() -> None:
    other = "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed"
    assert _produce_error([other, REFUSED, other]) == f"{other} | {REFUSED}"


def test_the_follow_on_failures_stack_frames_are_dropped_with_it() -> None:
    # Seen in CI against Kafka 4.3.1: the follow-on exception's frames printed after it.
    frames = [
        "\tat org.apache.kafka.clients.producer.internals.TransactionManager"
        ".maybeFailWithError(TransactionManager.java:1010)",
        "\tat org.apache.kafka.clients.producer.KafkaProducer.send(KafkaProducer.java:962)",
        "\t... 2 more",
    ]
    assert _produce_error([REFUSED, FOLLOW_ON, *frames]) == REFUSED
