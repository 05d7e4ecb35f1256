"""The conformance suite's quick tier: kop judged against a reference Apache Kafka
by unmodified clients (conformance/). Fails on any difference that is not a known,
explained one, and on a known one that no longer shows up. Run twice: one kop
against one Kafka broker, and three kop instances (one cluster, docs/decisions.md
D15) against a Kafka cluster of three brokers (tools/kafka.py start --brokers 3)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.integration.conftest import REPO


def _quick_tier(*options: str, at_least: int = 20) -> str:
    """The quick tier's report; fails the test unless every cell agrees or differs for
    a known reason, and unless it judged `at_least` cells. Each cell runs on Kafka and
    on kop at once (`--together`): the two share nothing, and make test's time is what
    the cells wait for."""
    run = subprocess.Popen(
        [sys.executable, "-m", "conformance", "--quick", "--together", *options],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = run.communicate(timeout=840)
    except subprocess.TimeoutExpired:
        run.terminate()  # it stops the kop instances and brokers it started
        out, err = run.communicate(timeout=60)
    report = out[-12000:] + err[-4000:] + _differences(out)
    assert run.returncode == 0, report
    judged = re.search(r"(\d+) of (\d+) agree with Kafka", out)
    assert judged is not None and int(judged.group(2)) >= at_least, report
    return out


def _differences(out: str) -> str:
    """The report's differing cells with their paths, repeated last: a CI log keeps the
    end of a long failure, and the grid before them is what it cuts."""
    block = re.findall(r"^(?:DIFFER|STALE) .*(?:\n    .*)*", out, re.MULTILINE)
    return "\n\ndiffering cells:\n" + "\n".join(block) if block else ""


# What three instances change: a group's or a transaction's coordinator on another
# instance than the partitions' leaders, requests routed to leaders, brokers and
# coordinators as a tool lists them (one tool: each is a JVM per command, 28-57 s a
# cell). The rest of the quick tier is judged with one instance; the full matrix (make
# conformance CONFORMANCE_ARGS="--instances 3") runs every scenario on three. (The
# whole quick tier on three took 431 s of a CI run; these cells about 140 s.)
ACROSS_INSTANCES = (
    "groups/", "transactions/", "tools/consumer-groups", "positions/leader-epochs",
    "produce/idempotent-retries", "admin/describe-cluster", "metadata/internal-topics",
)  # fmt: skip


@pytest.mark.timeout(900)
def test_quick_tier_agrees_with_kafka(pulsar: str) -> None:
    # Without kafkajs (a Node process per call): the full matrix (make conformance) runs it.
    out = _quick_tier("--skip-client", "kafkajs")
    assert "one kop instance judged by one Kafka broker" in out


@pytest.mark.timeout(900)
def test_quick_tier_on_three_instances_agrees_with_a_three_broker_kafka(pulsar: str) -> None:
    chosen = [option for prefix in ACROSS_INSTANCES for option in ("--scenario", prefix)]
    out = _quick_tier(
        "--instances", "3", "--skip-client", "kafkajs", "--show", *chosen, at_least=10
    )  # fmt: skip
    assert "3 kop instances judged by a Kafka cluster of 3 brokers" in out
    # Raw requests went to the partition's leader (at another broker both would answer
    # NOT_LEADER_OR_FOLLOWER and agree without judging anything): the first write was
    # stored, on kop and on Kafka.
    retries = re.findall(r'^    (kop|kafka): \{"seq 0": \["none", 0\]', out, re.MULTILINE)
    assert sorted(retries) == ["kafka", "kop"], out[-12000:]
