"""Each client family over a target's SASL_SSL listener, signed in as a user: what an
application does (produce, a group member's consume) and what it then sees,
failures named in the client's own words (ClientError). The security scenarios
drive these; the plain drivers stay unaware of credentials."""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, Producer

from conformance.clients.aiokafka_client import _sync
from conformance.clients.base import ClientError
from conformance.clients.java_tools import JavaTools
from conformance.model import Ctx

WITHIN = 30.0  # seconds a client gets for a step before it counts as failed


@dataclass(frozen=True)
class Login:
    """Who signs in where: the target's SASL_SSL listener, a user, a mechanism."""

    bootstrap: str
    ca_file: str
    user: str
    password: str
    mechanism: str = "PLAIN"


class SaslClient(Protocol):
    name: str

    def produce(self, ctx: Ctx, login: Login, topic: str, values: list[str]) -> list[int]:
        """Send `values` to partition 0; their offsets."""
        ...

    def group_consume(self, ctx: Ctx, login: Login, topic: str, group: str, n: int) -> list[str]:
        """Join `group`, read `n` values from the earliest, commit, leave."""
        ...


class LibrdkafkaSasl:
    name = "confluent-kafka"

    def _conf(self, login: Login, errors: list[KafkaError]) -> dict[str, Any]:
        return {
            "bootstrap.servers": login.bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": login.ca_file, "sasl.mechanisms": login.mechanism,
            "sasl.username": login.user, "sasl.password": login.password,
            "error_cb": errors.append,
        }  # fmt: skip

    @staticmethod
    def _refused(errors: list[KafkaError]) -> None:
        """An authentication failure reaches librdkafka's error callback only."""
        for e in errors:
            if e.code() == KafkaError._AUTHENTICATION:
                raise ClientError(e.name())

    def produce(self, ctx: Ctx, login: Login, topic: str, values: list[str]) -> list[int]:
        errors: list[KafkaError] = []
        done: list[KafkaError | int] = []
        producer = Producer({**self._conf(login, errors), "message.timeout.ms": 20000})
        for v in values:
            producer.produce(topic, v.encode(), partition=0,
                             on_delivery=lambda e, m: done.append(e or m.offset()))  # fmt: skip
        deadline = time.monotonic() + WITHIN
        while len(done) < len(values) and time.monotonic() < deadline:
            producer.poll(0.2)
            self._refused(errors)
        for d in done:
            if isinstance(d, KafkaError):
                raise ClientError(d.name())
        return [d for d in done if isinstance(d, int)]

    def group_consume(self, ctx: Ctx, login: Login, topic: str, group: str, n: int) -> list[str]:
        errors: list[KafkaError] = []
        consumer = Consumer({
            **self._conf(login, errors), "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })  # fmt: skip
        got: list[str] = []
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + WITHIN
            while len(got) < n and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                self._refused(errors)
                if msg is None:
                    continue
                if msg.error():
                    raise ClientError(msg.error().name())
                got.append(msg.value().decode())
            if got:
                consumer.commit(asynchronous=False)
            return got
        finally:
            consumer.close()


class KafkaPythonSasl:
    name = "kafka-python"

    def _conf(self, login: Login) -> dict[str, Any]:
        return {
            "bootstrap_servers": login.bootstrap, "security_protocol": "SASL_SSL",
            "ssl_cafile": login.ca_file, "sasl_mechanism": login.mechanism,
            "sasl_plain_username": login.user, "sasl_plain_password": login.password,
            "request_timeout_ms": 20000, "bootstrap_timeout_ms": 10000,
        }  # fmt: skip

    def produce(self, ctx: Ctx, login: Login, topic: str, values: list[str]) -> list[int]:
        from kafka import KafkaProducer
        from kafka.errors import KafkaError as Error

        try:
            producer = KafkaProducer(**self._conf(login), max_block_ms=10000)
            try:
                futures = [producer.send(topic, v.encode(), partition=0) for v in values]
                return [f.get(timeout=WITHIN).offset for f in futures]
            finally:
                producer.close(timeout=10)
        except Error as exc:
            raise ClientError(type(exc).__name__) from exc

    def group_consume(self, ctx: Ctx, login: Login, topic: str, group: str, n: int) -> list[str]:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError as Error

        try:
            consumer = KafkaConsumer(
                topic, **self._conf(login), group_id=group, auto_offset_reset="earliest",
                enable_auto_commit=False,
            )  # fmt: skip
            try:
                got: list[str] = []
                deadline = time.monotonic() + WITHIN
                while len(got) < n and time.monotonic() < deadline:
                    for records in consumer.poll(timeout_ms=500).values():
                        got += [r.value.decode() for r in records]
                if got:
                    consumer.commit()
                return got[:n]
            finally:
                consumer.close()
        except Error as exc:
            raise ClientError(type(exc).__name__) from exc


class AioKafkaSasl:
    name = "aiokafka"

    def _conf(self, login: Login) -> dict[str, Any]:
        from aiokafka.helpers import create_ssl_context

        return {
            "bootstrap_servers": login.bootstrap, "security_protocol": "SASL_SSL",
            "ssl_context": create_ssl_context(cafile=login.ca_file),
            "sasl_mechanism": login.mechanism, "sasl_plain_username": login.user,
            "sasl_plain_password": login.password, "request_timeout_ms": 20000,
        }  # fmt: skip

    def produce(self, ctx: Ctx, login: Login, topic: str, values: list[str]) -> list[int]:
        from aiokafka import AIOKafkaProducer

        async def run() -> list[int]:
            producer = AIOKafkaProducer(**self._conf(login))
            await producer.start()
            try:
                sent = [await producer.send_and_wait(topic, v.encode(), partition=0)
                        for v in values]  # fmt: skip
                return [s.offset for s in sent]
            finally:
                await producer.stop()

        return _sync(asyncio.wait_for(run(), WITHIN))

    def group_consume(self, ctx: Ctx, login: Login, topic: str, group: str, n: int) -> list[str]:
        from aiokafka import AIOKafkaConsumer

        async def run() -> list[str]:
            consumer = AIOKafkaConsumer(
                topic, **self._conf(login), group_id=group, auto_offset_reset="earliest",
                enable_auto_commit=False,
            )  # fmt: skip
            await consumer.start()
            try:
                got: list[str] = []
                while len(got) < n:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        got += [r.value.decode() for r in records]
                await consumer.commit()
                return got[:n]
            finally:
                await consumer.stop()

        return _sync(asyncio.wait_for(run(), WITHIN))


def client_properties(login: Login) -> str:
    """A Java client's config for this login (--command-config, --producer.config)."""
    module = "plain.PlainLoginModule" if login.mechanism == "PLAIN" else "scram.ScramLoginModule"
    return (
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={login.mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{login.user}" password="{login.password}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={login.ca_file}\n"
    )


def properties_file(login: Login) -> str:
    path = Path(tempfile.gettempdir()) / f"conformance-{login.user}-{uuid.uuid4().hex[:8]}.props"
    path.write_text(client_properties(login))
    return str(path)


class JavaSasl:
    """Kafka's console producer and consumer, signed in through a client config file;
    their output (errors included) is the observation."""

    name = "java-tools"

    def __init__(self, tools: JavaTools) -> None:
        self._tools = tools

    def produce(self, ctx: Ctx, login: Login, topic: str, values: list[str]) -> list[int]:
        """The console producer names no offsets: [] when it sent everything."""
        run = self._tools.run(
            ctx, "console-producer", "--bootstrap-server", login.bootstrap, "--topic", topic,
            "--command-config", properties_file(login), stdin="".join(f"{v}\n" for v in values),
        )  # fmt: skip
        if run.code != 0 or run.out:
            shown = [line for line in run.out if not _follow_on(line)]
            raise ClientError(" | ".join(_distinct(shown)) or f"exit {run.code}")
        return []

    def group_consume(self, ctx: Ctx, login: Login, topic: str, group: str, n: int) -> list[str]:
        run = self._tools.run(
            ctx, "console-consumer", "--bootstrap-server", login.bootstrap, "--topic", topic,
            "--group", group, "--from-beginning", "--max-messages", str(n),
            "--timeout-ms", "20000", "--command-config", properties_file(login),
        )  # fmt: skip
        values = [line for line in run.out if not line.startswith(_NOT_RECORDS)]
        if run.code != 0 or len(values) != n:
            shown = [line for line in run.out if not line.startswith(_NOT_RECORDS[-1])]
            raise ClientError(
                " | ".join(_distinct(shown)) or f"exit {run.code}, {len(values)} read"
            )
        return values


# What the console consumer prints beside the records: its count, errors, and a notice
# about the new consumer protocol (a KIP-848 broker's, both targets get it).
_NOT_RECORDS = ("Processed", "org.", "ERROR", "The consumer rebalance protocol")


# After a refused send the Java producer's idempotence state is in error, and the console
# producer's next call on it sometimes (a race inside the client, seen against Kafka 4.3.1)
# prints this second failure too: a follow-on of the first line, not what the broker said.
_AFTER_A_FAILED_SEND = "java.lang.IllegalStateException: Transactional method"
# The client's stack frames under either failure ("\tat org.apache.kafka...", "... 3 more"):
# where in the client the failure surfaced, which differs run to run, not what it was.
_STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def _follow_on(line: str) -> bool:
    return line.startswith(_AFTER_A_FAILED_SEND) or bool(_STACK_FRAME.match(line))


def _distinct(lines: list[str]) -> list[str]:
    """Each line once, in order (a tool repeats one error for every record)."""
    return list(dict.fromkeys(lines))


SASL_CLIENTS: dict[str, SaslClient] = {
    c.name: c for c in (LibrdkafkaSasl(), KafkaPythonSasl(), AioKafkaSasl())
}
