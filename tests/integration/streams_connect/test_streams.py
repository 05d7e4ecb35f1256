"""Kafka Streams 4.3.1, unmodified: a word count with a repartition (groupBy word) and
a persistent RocksDB store (its changelog a compacted topic) that Streams creates
itself. Its counts are what a user relies on: with at_least_once, exact after a clean
run, and after a SIGKILL and a restart never short (at-least-once may recount); with
exactly_once_v2 (transactions), exact after a SIGKILL and a restart too, and, as
against Kafka 4.3.1, under transaction version 2: Streams adds no partition
explicitly (no AddPartitionsToTxn, no AddOffsetsToTxn) when the broker finalizes it."""

from __future__ import annotations

import os
import re
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.streams_connect.jvm import wait_until
from tests.integration.streams_connect.wordcount import (
    CountTable,
    WordCountApp,
    create_topics,
    lines,
    produce,
    word_counts,
)

pytestmark = [pytest.mark.apps, pytest.mark.timeout(600)]

INPUT_PARTITIONS, OUTPUT_PARTITIONS = 3, 2
EXPLICIT_ADDS = ("add_partitions_to_txn", "add_offsets_to_txn")


def explicit_adds(request: pytest.FixtureRequest) -> float | None:
    """How many AddPartitionsToTxn and AddOffsetsToTxn kop has answered (its metrics);
    None when the applications run against another broker."""
    if os.environ.get("KOP_APPS_TARGET", "kop") != "kop":
        return None
    kop = request.getfixturevalue("kop")
    with urllib.request.urlopen(f"http://127.0.0.1:{kop.admin_port}/metrics", timeout=10) as r:
        page = r.read().decode()
    apis = "|".join(EXPLICIT_ADDS)
    pattern = r'^kop_requests_total\{[^}]*api="(' + apis + r')"[^}]*\} (\S+)$'
    return sum(float(m.group(2)) for m in re.finditer(pattern, page, re.M))


@pytest.fixture
def app(apps_classpath: str, app_bootstrap: str, tmp_path: Path) -> Iterator[WordCountApp]:
    wordcount = WordCountApp(apps_classpath, app_bootstrap, f"wc-{uuid.uuid4().hex[:8]}", tmp_path)
    create_topics(app_bootstrap, {wordcount.input: INPUT_PARTITIONS,
                                  wordcount.output: OUTPUT_PARTITIONS})  # fmt: skip
    yield wordcount
    wordcount.stop()


@pytest.fixture
def table(app: WordCountApp, app_bootstrap: str) -> Iterator[CountTable]:
    counts = CountTable(app_bootstrap, app.output, OUTPUT_PARTITIONS)
    yield counts
    counts.close()


def test_counts_are_exact(app: WordCountApp, table: CountTable, app_bootstrap: str) -> None:
    text = lines(2000, seed=1)
    expected = word_counts(text)
    produce(app_bootstrap, app.input, text)
    app.start()
    wait_until("RUNNING", lambda: app.state() == "RUNNING", 120, app.state, [app])
    took = wait_until("every count", lambda: table.reached(expected), 180,
                      lambda: table.progress(expected), [app])  # fmt: skip
    print(f"[apps] {sum(expected.values())} words counted in {took:.1f} s", flush=True)
    assert table.latest == dict(expected), "a clean run counted some word twice"


def test_killed_and_restarted_counts_are_never_short(
    app: WordCountApp, table: CountTable, app_bootstrap: str
) -> None:
    """SIGKILL while counting the first half (uncommitted progress is lost), the second
    half written while it is down, then a restart on the same state directory."""
    first, second = lines(2000, seed=2), lines(2000, seed=3)
    produce(app_bootstrap, app.input, first)
    app.start()
    quarter = sum(word_counts(first).values()) // 4
    wait_until("a quarter of the first half counted",
               lambda: table.total() >= quarter, 180,
               lambda: table.progress(word_counts(first)), [app])  # fmt: skip
    app.kill9()
    produce(app_bootstrap, app.input, second)
    app.start()
    expected = word_counts(first + second)
    took = wait_until("every count after the restart", lambda: table.reached(expected), 240,
                      lambda: table.progress(expected), [app])  # fmt: skip
    over = {w: table.latest[w] - n for w, n in expected.items() if table.latest[w] > n}
    print(f"[apps] all counted {took:.1f} s after the restart; recounted: {over}", flush=True)
    assert all(table.latest[w] >= n for w, n in expected.items())


def test_exactly_once_v2_counts_are_exact_across_a_kill9(
    apps_classpath: str, app_bootstrap: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same kill and restart under exactly_once_v2: what the killed run had not
    committed is aborted (its transaction fenced by the restarted one, or timed out),
    the store is restored from its changelog as committed, and no word is counted
    twice or missed in the output read read_committed. Every partition and the
    offsets joined the transactions implicitly (transaction version 2)."""
    adds_before = explicit_adds(request)
    app = WordCountApp(apps_classpath, app_bootstrap, f"eos-{uuid.uuid4().hex[:8]}", tmp_path,
                       guarantee="exactly_once_v2")  # fmt: skip
    create_topics(app_bootstrap, {app.input: INPUT_PARTITIONS, app.output: OUTPUT_PARTITIONS})
    table = CountTable(app_bootstrap, app.output, OUTPUT_PARTITIONS)
    try:
        # fed while Streams runs, so the kill lands mid-way: a transaction (one every
        # commit.interval.ms, 100 ms under exactly_once_v2) is open, records consumed
        first, second = lines(4000, seed=4), lines(2000, seed=5)
        feeding = threading.Thread(target=lambda: [
            (produce(app_bootstrap, app.input, first[i : i + 100]), time.sleep(0.05))
            for i in range(0, len(first), 100)])  # fmt: skip
        app.start()
        feeding.start()
        quarter = sum(word_counts(first).values()) // 4
        wait_until("a quarter of the first half counted",
                   lambda: table.total() >= quarter, 180,
                   lambda: table.progress(word_counts(first)), [app])  # fmt: skip
        killed_at = table.total()
        app.kill9()
        feeding.join(120)
        produce(app_bootstrap, app.input, second)
        app.start()
        expected = word_counts(first + second)
        took = wait_until("every count after the restart", lambda: table.reached(expected),
                          240, lambda: table.progress(expected), [app])  # fmt: skip
        print(f"[apps] exactly_once_v2: killed with {killed_at} of "
              f"{sum(word_counts(first).values())} words counted; all counted {took:.1f} s "
              "after the restart", flush=True)  # fmt: skip
        assert table.latest == dict(expected), "a word counted twice under exactly_once_v2"
        if adds_before is not None:
            assert explicit_adds(request) == adds_before, "Streams added partitions explicitly"
    finally:
        app.stop()
        table.close()
