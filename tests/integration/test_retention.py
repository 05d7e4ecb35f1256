"""Retention on a real Pulsar: when Pulsar deletes a partition's oldest ledgers, kop
moves the log start to the first surviving record, surviving records keep their
offsets, and offsets never go backwards, not even across a restart after every
record was deleted.

What Pulsar 4.0.7 (standalone) does, from `GET .../internalStats` around the calls
used here to delete data on demand:

- `PUT .../unload` closes the partition's current ledger. The next use of the
  topic (kop's reconnecting producer and reader, or the internalStats call itself)
  loads it again with a new, empty current ledger. Before: ledgers
  `[(L1, 0)]`, `currentLedgerEntries` 5; after: `[(L1, 5), (L2, 0)]`, 0.
- `DELETE .../truncate` moves every cursor (Pulsar's `pulsar.dedup` one and the
  cursors of non-durable readers, like kop's) to the end and deletes every
  *closed* ledger at once, whatever unread entries it holds and whatever the
  retention policy (kop set 7 days on the topic). It never deletes the current
  ledger, even one with entries: `[(L1, 5), (L2, 0)]` with 5 entries in L2
  becomes `[(L2, 0)]` with those 5 entries still readable.

So "unload, produce, truncate" deletes exactly the records written before the
unload. A second unload before the truncate would close the second ledger too,
and the truncate would then delete every record; the restart test does that on
purpose.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic

from conformance.clients.raw import RawClient
from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec, cf_consume
from tests.integration.conftest import KopProcess
from tests.integration.observe import (
    internal_stats,
    ledgers,
    metric,
    partition_state,
    truncate,
    unload,
    wait_for_partition,
)

EARLIEST, LATEST = -2, -1

# The default tail buffer serves the surviving records from memory; without one
# every fetch reads them back from Pulsar through history readers.
GATEWAYS = {
    "tail-buffer": {},
    "no-tail-buffer": {"KOP_TAIL_BUFFER_BYTES": "0"},
}


def _recs(tag: str, n: int, base_ts: int) -> list[Rec]:
    return [
        Rec(f"{tag}{i}".encode(), f"{tag}-value-{i}".encode(), (), base_ts + i) for i in range(n)
    ]


def _two_ledgers(produce: Any, bootstrap: str, topic: str) -> tuple[list[Rec], list[Rec]]:
    """Records a (offsets 0-4) in one ledger and b (5-9) in the next: an unload in
    between makes Pulsar roll the ledger, so a trim can take the first alone."""
    first = _recs("a", 5, 1_700_000_000_000)
    second = _recs("b", 5, 1_700_000_001_000)
    assert produce(bootstrap, topic, first, None) == list(range(5))
    unload(topic)
    assert produce(bootstrap, topic, second, None) == list(range(5, 10))
    return first, second


def _list_offset(client: RawClient, topic: str, timestamp: int) -> tuple[int, int]:
    """ListOffsets v7 for partition 0: (error code, offset)."""
    resp = client.request(
        2,
        7,
        replica_id=-1,
        isolation_level=0,
        topics=(
            ListOffsetsTopic(
                name=topic,
                partitions=(ListOffsetsPartition(partition_index=0, timestamp=timestamp),),
            ),
        ),
    )
    part = resp.topics[0].partitions[0]
    return part.error_code, part.offset


def _fetch(client: RawClient, topic: str, offset: int) -> Any:
    """Fetch v12 of partition 0 at `offset`, answered at once: the partition's answer."""
    return client.fetch(topic, offset).responses[0].partitions[0]


def _consume_from_earliest(
    bootstrap: str, topic: str, n: int, start: int = 0
) -> list[tuple[int, bytes | None, bytes | None]]:
    """What a consumer assigned at `start` with auto.offset.reset=earliest reads:
    (offset, key, value) of the first `n` records, or fewer after 30 s."""
    return [(r.offset, r.key, r.value) for r in cf_consume(bootstrap, topic, n, start, "earliest")]


@pytest.fixture(params=sorted(GATEWAYS))
def gateway(request: pytest.FixtureRequest, pulsar: str, tmp_path: Path) -> Any:
    """A gateway of the test's own that looks for trims every second."""
    gw = KopProcess(tmp_path, KOP_RETENTION_CHECK_S="1", **GATEWAYS[request.param])
    gw.start()
    yield gw
    gw.stop()


def test_trim_while_running_moves_log_start_and_keeps_offsets(
    gateway: KopProcess, topic: str
) -> None:
    """Pulsar deletes the ledger holding offsets 0..4 while kop serves the partition:
    kop notices on its own (retention check), the log start becomes 5, offsets
    below it are out of range, a consumer resetting to earliest reads exactly the
    surviving records 5..9 at their original offsets, and produce continues at 10."""
    create_topic(gateway.bootstrap, topic, entry_format="pulsar")
    _first, second = _two_ledgers(PRODUCERS["kafka-python"], gateway.bootstrap, topic)
    before = ledgers(topic)
    assert len(before) == 2 and all(entries > 0 for _, entries in before), (
        f"expected the first 5 records in a closed ledger and the next 5 in the current "
        f"one; Pulsar shows (ledger, entries) {before}"
    )
    truncate(topic)
    after = ledgers(topic)
    assert after == [before[1]], f"truncate left {after} of {before}"

    state = wait_for_partition(
        gateway, topic, lambda s: s.get("log_start_offset", 0) > 0, "log start moved"
    )
    assert state["log_start_offset"] == 5 and state["high_watermark"] == 10, state
    assert state["trims"] >= 1 and state["last_error"] is None, state
    assert (metric(gateway, "kop_log_trims_total") or 0) >= 1

    client = RawClient(gateway.port)
    try:
        assert _list_offset(client, topic, EARLIEST) == (ErrorCode.none, 5)
        assert _list_offset(client, topic, LATEST) == (ErrorCode.none, 10)
        below = _fetch(client, topic, 0)
        assert below.error_code == ErrorCode.offset_out_of_range and not below.records
        assert _fetch(client, topic, 4).error_code == ErrorCode.offset_out_of_range
        at_start = _fetch(client, topic, 5)
        assert at_start.error_code == ErrorCode.none and at_start.log_start_offset == 5
        assert at_start.high_watermark == 10 and b"b-value-0" in at_start.records
    finally:
        client.close()

    assert _consume_from_earliest(gateway.bootstrap, topic, 5) == [
        (5 + i, r.key, r.value) for i, r in enumerate(second)
    ]
    third = _recs("c", 1, 1_700_000_002_000)
    assert PRODUCERS["confluent-kafka"](gateway.bootstrap, topic, third, None) == [10]
    assert _consume_from_earliest(gateway.bootstrap, topic, 6) == [
        (5 + i, r.key, r.value) for i, r in enumerate(second + third)
    ]
    if "KOP_TAIL_BUFFER_BYTES" in gateway.env:  # the reads above went through Pulsar
        assert (metric(gateway, "kop_history_readers_opened_total") or 0) > 0


def test_restart_after_everything_was_truncated_keeps_the_high_watermark(
    gateway: KopProcess, topic: str
) -> None:
    """kop stops cleanly, then Pulsar deletes every record of the partition (unload
    closes the only ledger holding data, truncate deletes it). The restarted kop
    still reports high watermark 10, the log start moves up to it (nothing is left
    below), and the next record gets offset 10, not 0."""
    create_topic(gateway.bootstrap, topic, entry_format="pulsar")
    first = _recs("a", 10, 1_700_000_000_000)
    assert PRODUCERS["kafka-python"](gateway.bootstrap, topic, first, None) == list(range(10))
    wait_for_partition(gateway, topic, lambda s: s.get("high_watermark") == 10, "10 records")
    assert gateway.stop() == 0

    unload(topic)
    truncate(topic)
    stats = internal_stats(topic)
    assert stats["numberOfEntries"] == 0, (
        f"truncate left entries: ledgers {stats['ledgers']}, "
        f"current ledger entries {stats['currentLedgerEntries']}"
    )

    gateway.start()
    client = RawClient(gateway.port)
    try:
        assert _list_offset(client, topic, LATEST) == (ErrorCode.none, 10)
        assert _list_offset(client, topic, EARLIEST) == (ErrorCode.none, 10)
        assert _fetch(client, topic, 0).error_code == ErrorCode.offset_out_of_range
    finally:
        client.close()
    state = partition_state(gateway, topic)
    assert state["high_watermark"] == 10 and state["log_start_offset"] == 10, state

    after = _recs("z", 3, 1_700_000_005_000)
    assert PRODUCERS["kafka-python"](gateway.bootstrap, topic, after, None) == [10, 11, 12]
    assert _consume_from_earliest(gateway.bootstrap, topic, 3) == [
        (10 + i, r.key, r.value) for i, r in enumerate(after)
    ]


def test_read_that_meets_deleted_data_moves_log_start_at_once(
    pulsar: str, tmp_path: Path, topic: str
) -> None:
    """No periodic check for an hour and no tail buffer: the first fetch below the
    new log start reads from Pulsar, finds the checkpoint's entry gone and moves the
    log start itself, so that very fetch is answered OFFSET_OUT_OF_RANGE (never with
    other records under offset 0) and the surviving records keep their offsets."""
    gw = KopProcess(tmp_path, KOP_RETENTION_CHECK_S="3600", KOP_TAIL_BUFFER_BYTES="0")
    gw.start()
    try:
        create_topic(gw.bootstrap, topic, entry_format="kafka")
        _first, second = _two_ledgers(PRODUCERS["confluent-kafka"], gw.bootstrap, topic)
        before = ledgers(topic)
        assert len(before) == 2 and all(entries > 0 for _, entries in before), before
        truncate(topic)
        assert ledgers(topic) == [before[1]]
        assert partition_state(gw, topic)["log_start_offset"] == 0  # nothing noticed yet

        client = RawClient(gw.port)
        try:
            below = _fetch(client, topic, 0)
            assert below.error_code == ErrorCode.offset_out_of_range and not below.records
            state = partition_state(gw, topic)
            assert state["log_start_offset"] == 5 and state["trims"] == 1, state
            assert _list_offset(client, topic, EARLIEST) == (ErrorCode.none, 5)
            at_start = _fetch(client, topic, 5)
            assert at_start.error_code == ErrorCode.none and b"b-value-0" in at_start.records
        finally:
            client.close()
        assert _consume_from_earliest(gw.bootstrap, topic, 5) == [
            (5 + i, r.key, r.value) for i, r in enumerate(second)
        ]
    finally:
        gw.stop()


def test_restart_after_a_partial_truncation_starts_at_the_first_surviving_record(
    pulsar: str, tmp_path: Path, topic: str
) -> None:
    """kop stops cleanly; Pulsar deletes the ledger holding offsets 0..4 (the one
    holding 5..9 survives); kop starts again. Its tail follower resumes at the
    checkpoint kop keeps at the surviving ledger's first entry (offset 5, which
    `resumed_from_offset` shows), so it never meets the deleted data, and the
    persisted checkpoint at offset 0 still sets the log start. A consumer asking
    for the earliest offset must get 5 from the first request on, not only once a
    fetch below it or the next periodic check (here an hour away; 60 s by default)
    has noticed the deletion: the deletion happened before the partition opened."""
    gw = KopProcess(tmp_path, KOP_RETENTION_CHECK_S="3600")
    gw.start()
    try:
        create_topic(gw.bootstrap, topic, entry_format="pulsar")
        _two_ledgers(PRODUCERS["kafka-python"], gw.bootstrap, topic)
        assert gw.stop() == 0
        before = ledgers(topic)
        truncate(topic)
        assert ledgers(topic) == [before[-1]], f"truncate left {ledgers(topic)} of {before}"

        gw.start()
        client = RawClient(gw.port)
        try:
            latest = _list_offset(client, topic, LATEST)  # opens the partition
            state = partition_state(gw, topic)
            earliest = _list_offset(client, topic, EARLIEST)
        finally:
            client.close()
        assert latest == (ErrorCode.none, 10) and state["resumed_from_offset"] == 5, state
        assert earliest == (ErrorCode.none, 5), f"earliest {earliest}; kop reports {state}"
    finally:
        gw.stop()
