"""Topic administration through kop with the Java Kafka Admin client that Spark's
Kafka connector already put on the driver's classpath (called through Py4J): the
jobs create and inspect topics the way a Kafka application would."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession


class KafkaAdmin:
    def __init__(self, spark: SparkSession, bootstrap: str) -> None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None, "no JVM: a SparkSession must be running"
        self._jvm: Any = jvm
        props = self._jvm.java.util.Properties()
        props.put("bootstrap.servers", bootstrap)
        props.put("default.api.timeout.ms", "60000")
        self._admin = self._jvm.org.apache.kafka.clients.admin.Admin.create(props)

    def _clients(self) -> Any:
        return self._jvm.org.apache.kafka.clients.admin

    def topics(self) -> set[str]:
        return set(self._admin.listTopics().names().get())

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        optional = self._jvm.java.util.Optional
        topic = self._clients().NewTopic(name, optional.of(partitions), optional.empty())
        conf = self._jvm.java.util.HashMap()
        for k, v in configs.items():
            conf.put(k, v)
        topic.configs(conf)
        self._admin.createTopics(self._jvm.java.util.List.of(topic)).all().get()

    def delete_topic(self, name: str) -> None:
        names = self._jvm.java.util.List.of(name)
        self._admin.deleteTopics(names).all().get()

    def end_offsets(self, name: str, partitions: int) -> dict[int, int]:
        spec = self._clients().OffsetSpec.latest()
        wanted = self._jvm.java.util.HashMap()
        tps = {
            p: self._jvm.org.apache.kafka.common.TopicPartition(name, p) for p in range(partitions)
        }
        for tp in tps.values():
            wanted.put(tp, spec)
        found = self._admin.listOffsets(wanted).all().get()
        return {p: int(found.get(tp).offset()) for p, tp in tps.items()}

    def caught_up(
        self,
        name: str,
        partitions: int,
        done: Callable[[dict[int, int]], bool],
        within_s: float = 120.0,
    ) -> dict[int, int]:
        """End offsets once `done(ends)`: kop counts what native Pulsar producers
        write when its tail reader gets there, a moment after Pulsar acknowledged
        it. At the deadline, what it saw last."""
        deadline = time.monotonic() + within_s
        while True:
            ends = self.end_offsets(name, partitions)
            if done(ends) or time.monotonic() > deadline:
                return ends
            time.sleep(0.5)

    def partitions(self, name: str) -> int:
        names = self._jvm.java.util.List.of(name)
        described = self._admin.describeTopics(names).allTopicNames().get()
        return int(described.get(name).partitions().size())

    def close(self) -> None:
        self._admin.close()
