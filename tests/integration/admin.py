"""Topic set-up through Kafka's admin API (kafka-python's KafkaAdminClient)."""

from __future__ import annotations

from kafka.admin import KafkaAdminClient, NewTopic


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    entry_format: str | None = None,
    configs: dict[str, str] | None = None,
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        configs = dict(configs or {})
        if entry_format:
            configs["kop.entry.format"] = entry_format
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    finally:
        admin.close()
