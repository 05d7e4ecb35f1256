"""What incremental fetch sessions (KIP-227) save a consumer of many partitions
(`python -m bench.fetch_sessions`).

One kop against the shared Pulsar; one topic of `--partitions` partitions (1,000 by
default), a few records in each so every partition has a log to look at. One client,
one connection, Fetch v12 with `max_wait` 0 (answered at once: what is measured is the
work of a fetch, not its waiting), the same number of fetches two ways:

  sessionless   every fetch names every partition (session id 0, epoch -1)
  session       a full fetch opens a session (epoch 0), then incremental fetches name
                nothing (the partitions are the session's; kop answers only those with
                records or a change, here none once the first answer was read)

Per fetch: the request's bytes, the answer's bytes, kop's CPU (its utime + stime from
/proc, over the phase) and the round trip. The report (markdown) on stdout, the figures
in bench/results/fetch_sessions.json, a plot in docs/images/, and with --write in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic

from bench.common import log, pulsar_missing, pulsar_options, write_doc_section
from bench.kop_process import KopProcess
from bench.namespaces import bench_namespaces
from conformance.clients.raw import RawClient

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "fetch_sessions.png"
BEGIN, END = "<!-- fetch-sessions:begin -->", "<!-- fetch-sessions:end -->"
_TICK = os.sysconf("SC_CLK_TCK")
FETCH = 1
VERSION = 12
ROUND_TRIP = "round trip ms (median)"


@dataclass
class Phase:
    name: str
    fetches: int = 0
    request_bytes: list[int] = field(default_factory=list)
    answer_bytes: list[int] = field(default_factory=list)
    round_trip_ms: list[float] = field(default_factory=list)
    cpu_s: float = 0.0

    def summary(self) -> dict[str, float]:
        return {
            "fetches": self.fetches,
            "request bytes": statistics.median(self.request_bytes),
            "answer bytes": statistics.median(self.answer_bytes),
            ROUND_TRIP: statistics.median(self.round_trip_ms),
            "kop CPU ms per fetch": 1000 * self.cpu_s / max(1, self.fetches),
        }


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def _fields(
    topic: str, partitions: int, session: int, epoch: int, named: bool
) -> dict[str, object]:
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=1, partition_max_bytes=1 << 16)
        for p in range(partitions)
    )
    return {
        "max_wait": datetime.timedelta(0), "min_bytes": 0, "max_bytes": 50 << 20,
        "isolation_level": 0, "session_id": session, "session_epoch": epoch,
        "topics": (FetchTopic(topic=topic, partitions=parts),) if named else (),
        "forgotten_topics_data": (), "rack_id": "",
    }  # fmt: skip


def _fetch(client: RawClient, fields: dict[str, object], phase: Phase) -> object:
    correlation, payload = client.encode(FETCH, VERSION, **fields)
    started = time.perf_counter()
    client.send_frame(payload)
    frame = client.recv_frame()
    phase.round_trip_ms.append((time.perf_counter() - started) * 1000)
    phase.request_bytes.append(len(payload) + 4)
    phase.answer_bytes.append(len(frame) + 4)
    phase.fetches += 1
    return client.decode(FETCH, VERSION, correlation, frame)


def _phase(name: str, kop: KopProcess, run: object) -> Phase:
    phase = Phase(name)
    before = _cpu_s(kop.pid)
    run(phase)  # type: ignore[operator]
    phase.cpu_s = _cpu_s(kop.pid) - before
    log(f"{name}: {phase.summary()}")
    return phase


def measure(kop: KopProcess, partitions: int, fetches: int) -> list[Phase]:
    topic = f"fs-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kop.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=120)
    producer = Producer({"bootstrap.servers": kop.bootstrap, "linger.ms": 50})
    for p in range(partitions):
        producer.produce(topic, b"x" * 100, partition=p)
    producer.flush(120)
    client = RawClient.at(kop.bootstrap, timeout=120)
    warm = Phase("warm")
    _fetch(client, _fields(topic, partitions, 0, -1, True), warm)  # every log opened

    def sessionless(phase: Phase) -> None:
        for _ in range(fetches):
            _fetch(client, _fields(topic, partitions, 0, -1, True), phase)

    def session(phase: Phase) -> None:
        opened = _fetch(client, _fields(topic, partitions, 0, 0, True), phase)
        session_id = int(opened.session_id)  # type: ignore[attr-defined]
        assert session_id, f"no session: error {opened.error_code}"  # type: ignore[attr-defined]
        for epoch in range(1, fetches):
            answer = _fetch(client, _fields(topic, partitions, session_id, epoch, False), phase)
            assert int(answer.error_code) == 0, answer.error_code  # type: ignore[attr-defined]

    out = [_phase("sessionless", kop, sessionless), _phase("session", kop, session)]
    client.close()
    return out


def report(phases: list[Phase], partitions: int, commit: str) -> str:
    a, b = (p.summary() for p in phases)
    rows = [
        (name, a[name], b[name], b[name] / a[name] if a[name] else float("nan"))
        for name in (
            "request bytes",
            "answer bytes",
            "kop CPU ms per fetch",
            "round trip ms (median)",
        )
    ]
    lines = [
        BEGIN,
        f"## Incremental fetch sessions: one consumer of {partitions} partitions",
        "",
        f"`python -m bench.fetch_sessions` (kop `{commit}`): {a['fetches']} Fetch v12 requests each"
        " way on one connection, `max_wait` 0, every partition read to its end first (so an"
        " incremental answer names none). A session's first, full fetch is counted in its column.",
        "",
        "| per fetch | without a session | with a session | ratio |",
        "|---|---:|---:|---:|",
        *(f"| {n} | {x:,.2f} | {y:,.2f} | {r:.3f} |" for n, x, y, r in rows),
        "",
        "Bytes fall to almost nothing both ways; kop's CPU by far less, because an incremental"
        " fetch still visits every partition of its session (authorized again, its log's"
        " state read), only to answer none: the work left for issue 37.",
        "",
        f"![fetch sessions](images/{PLOT.name})",
        END,
    ]
    return "\n".join(lines)


def plot(phases: list[Phase]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a, b = (p.summary() for p in phases)
    names = ["request bytes", "answer bytes", "kop CPU ms per fetch"]
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, name in zip(axes, names, strict=True):
        ax.bar(["no session", "session"], [a[name], b[name]], color=["#999999", "#2a7ab0"])
        ax.set_title(name)
    fig.suptitle("Fetch v12 of 1,000 partitions, per request")
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--fetches", type=int, default=300)
    pulsar_options(parser)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    RESULTS.mkdir(parents=True, exist_ok=True)
    limit = {"KOP_MAX_PARTITIONS_PER_TOPIC": str(max(1000, args.partitions))}
    with (
        bench_namespaces(args.http_url, "fetch-sessions") as env,
        KopProcess(RESULTS / "fetch_sessions-kop.log", pulsar_url=args.pulsar_url,
                   http_url=args.http_url, env={**env, **limit}) as kop,
    ):  # fmt: skip
        phases = measure(kop, args.partitions, args.fetches)
    commit = os.popen(f"git -C {REPO} rev-parse --short HEAD").read().strip()
    (RESULTS / "fetch_sessions.json").write_text(
        json.dumps(
            {"commit": commit, "phases": [asdict(p) | p.summary() for p in phases]}, indent=1
        )
    )
    plot(phases)
    section = report(phases, args.partitions, commit)
    print(section)
    if args.write:
        write_doc_section(DOC, section, BEGIN, END, "")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
