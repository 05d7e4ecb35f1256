"""Set-up steps shared by scenarios (not what is judged): topics made and waited for."""

from __future__ import annotations

import contextlib
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def drop_topics(bootstrap: str, names: list[str]) -> None:
    """Delete what a scenario made (names that are not topics are skipped), so runs
    do not pile up topics on either broker."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=30).topics)
    doomed = [n for n in names if n in existing]
    if doomed:
        for fut in admin.delete_topics(doomed, operation_timeout=60).values():
            with contextlib.suppress(KafkaException):
                fut.result(60)


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    """Create a topic and wait until metadata shows every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(name, partitions, 1, config=configs or {})
    admin.create_topics([new], operation_timeout=30)[name].result(60)
    deadline = time.monotonic() + 30
    while True:
        try:
            md = admin.list_topics(name, timeout=10).topics.get(name)
            if md is not None and md.error is None and len(md.partitions) == partitions:
                return
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} not visible in metadata after 30 s")
        time.sleep(0.2)
