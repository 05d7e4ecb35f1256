"""Where the applications run: kop by default, or the reference Kafka.

KOP_APPS_TARGET picks the broker the same test bodies run against:
  kop (default)   the session's kop gateway over the local Pulsar
  kafka           the reference Apache Kafka 4.3.1 of tools/kafka.py (reused when
                  healthy, else started here and stopped after; KOP_KAFKA_PORT etc.)
  host:port       any bootstrap address, used as it is
Proving the harness against Kafka first is what makes a failure on kop kop's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.integration.conftest import REPO
from tests.integration.streams_connect.jvm import build_classpath

KAFKA_TOOL = [sys.executable, str(REPO / "tools" / "kafka.py")]


@contextlib.contextmanager
def reference_kafka() -> Iterator[str]:
    """The reference Kafka of tools/kafka.py: reused when healthy, else started here and
    stopped after."""
    healthy = subprocess.run([*KAFKA_TOOL, "status"], capture_output=True).returncode == 0
    if not healthy:
        subprocess.run([*KAFKA_TOOL, "start"], check=True)
    try:
        yield f"127.0.0.1:{os.environ.get('KOP_KAFKA_PORT', '19092')}"
    finally:
        if not healthy:
            subprocess.run([*KAFKA_TOOL, "stop"], check=False)


@pytest.fixture(scope="session")
def apps_classpath() -> str:
    return build_classpath()


@pytest.fixture(scope="session")
def app_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    target = os.environ.get("KOP_APPS_TARGET", "kop")
    if target == "kop":
        yield request.getfixturevalue("kop").bootstrap
    elif target == "kafka":
        with reference_kafka() as bootstrap:
            yield bootstrap
    else:
        yield target
