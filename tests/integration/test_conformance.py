"""The conformance suite's quick tier: kop judged against a reference Apache Kafka
by unmodified clients (conformance/). Fails on any difference that is not a known,
explained one, and on a known one that no longer shows up."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.integration.conftest import REPO


@pytest.mark.timeout(900)
def test_quick_tier_agrees_with_kafka(pulsar: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "conformance", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = run.stdout[-12000:] + run.stderr[-4000:]
    assert run.returncode == 0, report
    judged = re.search(r"(\d+) of (\d+) agree with Kafka", run.stdout)
    assert judged is not None and int(judged.group(2)) >= 20, report
