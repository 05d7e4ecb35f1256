"""While Pulsar is down clients get retriable errors and kop stays up; when Pulsar
returns kop recovers by itself and offsets continue. (Marked `restarts_pulsar`:
it stops and restarts the Pulsar that tools/pulsar.py manages, so conftest runs it
after every other test.)"""

from __future__ import annotations

import datetime
import subprocess
import time
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec, kp_consume
from tests.integration.conftest import PULSAR_TOOL, KopProcess

RETRIABLE = {
    ErrorCode.request_timed_out,
    ErrorCode.not_enough_replicas,
    ErrorCode.leader_not_available,
    ErrorCode.not_leader_or_follower,
    ErrorCode.kafka_storage_error,
}


def _recs(tag: str, n: int) -> list[Rec]:
    return [Rec(None, f"{tag}{i}".encode(), (), 1_700_000_000_000 + i) for i in range(n)]


@pytest.mark.restarts_pulsar
def test_pulsar_outage_gives_retriable_errors_then_recovers(
    pulsar: str, tmp_path: Path, topic: str
) -> None:
    gateway = KopProcess(tmp_path, KOP_WRITE_TIMEOUT_S="5")
    gateway.start()
    try:
        create_topic(gateway.bootstrap, topic)
        assert PRODUCERS["kafka-python"](gateway.bootstrap, topic, _recs("a", 5), None) == list(
            range(5)
        )
        subprocess.run([*PULSAR_TOOL, "stop"], check=True)
        assert subprocess.run([*PULSAR_TOOL, "status"], capture_output=True).returncode != 0, (
            "this test needs the Pulsar that tools/pulsar.py started (as make test does)"
        )
        client = RawClient(gateway.port, timeout=60)
        batch = build_batch([Record(0, 1_700_000_000_000, None, b"during")])
        resp = client.request(
            0,
            9,
            transactional_id=None,
            acks=-1,
            timeout=datetime.timedelta(seconds=30),
            topic_data=(
                TopicProduceData(
                    name=topic, partition_data=(PartitionProduceData(index=0, records=batch),)
                ),
            ),
        )
        assert resp.responses[0].partition_responses[0].error_code in RETRIABLE
        client.close()
        assert gateway.proc is not None and gateway.proc.poll() is None, "kop must stay up"
    finally:
        started = subprocess.run([*PULSAR_TOOL, "start"])
        if started.returncode != 0:
            gateway.stop()  # not left running against a Pulsar that will not come back
    assert started.returncode == 0, "Pulsar did not start again (its log is above)"
    try:
        deadline = time.monotonic() + 90
        offsets: list[int] = []
        while not offsets and time.monotonic() < deadline:
            try:
                offsets = PRODUCERS["kafka-python"](gateway.bootstrap, topic, _recs("b", 5), None)
            except Exception:
                time.sleep(1)
        assert offsets and offsets[0] >= 5 and offsets == list(range(offsets[0], offsets[0] + 5))
        # An attempt that failed while kop recovered may still be stored by its producer's
        # background retries (kafka-python retries forever), before or after the one that
        # succeeded: a plain producer's duplicates, as on Kafka. What was acknowledged is
        # at its offsets, and the log stays dense.
        got = kp_consume(gateway.bootstrap, topic, offsets[-1] + 1)[: offsets[-1] + 1]
        assert [r.offset for r in got] == list(range(offsets[-1] + 1))
        values = [r.value for r in got]
        assert values[:5] == [f"a{i}".encode() for i in range(5)]
        assert values[offsets[0] :] == [f"b{i}".encode() for i in range(5)]
    finally:
        gateway.stop()
