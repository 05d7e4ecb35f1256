"""`log_format=json`: one JSON object per line, carrying the connection (the client's
address, its principal) and the request (API, version, correlation id, client id) the
line was written for; plain lines by default. A log pipeline can then find every line
of one client or one request without parsing prose."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.ops import log_format
from kop.protocol.records import Record, build_batch
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.gateway.test_topic_traffic import _produce


@pytest.fixture
def stderr() -> Iterator[io.StringIO]:
    """Where kop's log goes in the test; the root logger's handlers back after it."""
    out = io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)


def test_plain_is_the_default_and_json_the_choice() -> None:
    assert KopConfig().log_format == "plain"
    assert KopConfig(log_format="json").log_format == "json"


async def test_a_json_line_names_the_connection_and_request_it_was_written_for(
    stderr: io.StringIO,
) -> None:
    log_format.configure("DEBUG", "json", stderr)
    async with gateway_with_hot_topic(1) as (gateway, _backend):
        client = RawClient(gateway.kafka_port, client_id="billing-app")
        try:
            # the first produce opens the partition, which kop logs (at DEBUG)
            batch = build_batch([Record(0, 0, None, b"v")])
            await asyncio.to_thread(_produce, client, 0, batch)
        finally:
            client.close()
    lines = [json.loads(line) for line in stderr.getvalue().splitlines() if line.strip()]
    assert lines, "nothing logged"
    for line in lines:
        assert {"time", "level", "logger", "message", "peer", "api", "client_id"} <= line.keys()
    served = [line for line in lines if line["api"] == "produce"]
    assert served, [line["message"] for line in lines]
    assert served[0]["client_id"] == "billing-app"
    assert served[0]["peer"].startswith("127.0.0.1:")


def test_plain_lines_stay_as_they_were(stderr: io.StringIO) -> None:
    log_format.configure("INFO", "plain", stderr)
    logging.getLogger("kop.test").warning("partition %d moved", 3)
    line = stderr.getvalue().strip()
    assert line.endswith(" WARNING kop.test: partition 3 moved")
