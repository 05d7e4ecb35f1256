"""Hostile frames against a running kop on a real Pulsar: kop answers or closes the
sender, and a well-behaved client is answered throughout (issue 18).

The gateway has namespaces of its own, so that mutated CreateTopics, DeleteTopics
and DeleteRecords touch nothing another test uses; they are dropped afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzz import corpus
from fuzz.cleanup import drop_namespaces
from fuzz.live import LiveFuzzer, LiveReport
from tests.integration.conftest import PULSAR_HTTP, KopProcess


@pytest.fixture(scope="module")
def fuzzed_kop(pulsar: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KopProcess]:
    suffix = uuid.uuid4().hex[:8]
    namespaces = [f"public/fuzz-{suffix}", f"public/fuzz-sys-{suffix}"]
    gateway = KopProcess(
        tmp_path_factory.mktemp("fuzz"),
        KOP_NAMESPACE=namespaces[0].split("/")[1],
        KOP_SYSTEM_NAMESPACE=namespaces[1],
        # Long polls and rebalances a mutant asks for end soon, so that connections
        # are not all waiting.
        KOP_FETCH_MAX_WAIT_CAP_MS="500",
        KOP_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
        # Mutated partition counts: a few topics of a few partitions at most (without
        # a limit, one CreateTopics asked Pulsar for 23,817,936 partitions).
        KOP_MAX_PARTITIONS_PER_TOPIC="8",
        KOP_MAX_PARTITIONS_TOTAL="64",
        # The fuzzer reconnects after every mutant kop refuses: hundreds of connections
        # a second from one address, which the per-address rate would refuse.
        KOP_MAX_CONNECTION_CREATION_RATE_PER_IP="100000",
    )
    gateway.start()
    yield gateway
    gateway.stop()
    drop_namespaces(PULSAR_HTTP, namespaces)


def _fuzz(gateway: KopProcess, frames: int, seed: int, kept: Path) -> LiveReport:
    """Run the fuzzer on a thread of its own (pytest-asyncio owns this one's loop)."""
    result: list[LiveReport] = []
    fuzzer = LiveFuzzer("127.0.0.1", gateway.port, seed=seed, corpus_dir=kept)
    thread = threading.Thread(target=lambda: result.append(asyncio.run(fuzzer.run(frames))))
    thread.start()
    thread.join()
    return result[0]


def test_every_kept_frame_costs_only_its_sender(fuzzed_kop: KopProcess, tmp_path: Path) -> None:
    for name, wire in corpus.load():
        report = _replay(fuzzed_kop, wire, tmp_path)
        assert not report.failures, (name, report.failures, fuzzed_kop.log_text()[-3000:])
    assert fuzzed_kop.proc is not None and fuzzed_kop.proc.poll() is None


def _replay(gateway: KopProcess, wire: bytes, kept: Path) -> LiveReport:
    """One kept frame on a connection of its own, then a fresh client's check."""
    fuzzer = LiveFuzzer("127.0.0.1", gateway.port, corpus_dir=kept)
    result: list[LiveReport] = []

    async def run() -> LiveReport:
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
        writer.write(wire)
        await writer.drain()
        # A prefix that promised more than came: kop waits for it, as it should.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reader.read(1 << 16), 2.0)
        writer.close()
        report = LiveReport()
        await fuzzer.check(report)
        return report

    thread = threading.Thread(target=lambda: result.append(asyncio.run(run())))
    thread.start()
    thread.join()
    return result[0]


def test_twenty_thousand_mutants_never_stop_kop(fuzzed_kop: KopProcess, tmp_path: Path) -> None:
    report = _fuzz(fuzzed_kop, 20_000, seed=18, kept=tmp_path)
    assert not report.failures, (report.failures, report.kept, fuzzed_kop.log_text()[-5000:])
    assert report.frames == 20_000
    # A fresh client was answered before the first mutant and after every 1,000.
    assert len(report.probes) == 21
    # Both ways of refusing were exercised, and some mutants were still good requests.
    assert report.outcomes["closed"] > 0 and report.outcomes["answered"] > 0, report.outcomes
    assert report.outcomes["mismatched"] == 0, report.outcomes
    assert fuzzed_kop.proc is not None and fuzzed_kop.proc.poll() is None
    assert "Traceback" not in fuzzed_kop.log_text(), fuzzed_kop.log_text()[-5000:]
