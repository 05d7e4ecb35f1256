"""The Go clients franz-go and Sarama, each through a small Go program of its own
(conformance/clients/go/<lib>/main.go; the JSON types shared in go/wire), run by
program.py: one JSON command on stdin, one JSON answer on stdout ({"error": ...}
with the library's name for a failure: kerr's UNKNOWN_TOPIC_OR_PARTITION, Sarama's
ErrUnknownTopicOrPartition). The programs are built with `go build` on first use
into ~/.cache/kop/conformance-go/<lib>-<hash of the module files>, so a changed
source (or a bumped library) builds anew and an unchanged one never rebuilds."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.clients.base import OffsetSpec, Unsupported
from conformance.clients.program import Program, from_wire, to_wire
from conformance.model import Rec

SOURCES = Path(__file__).resolve().parent / "go"
CALL_TIMEOUT = 60.0  # seconds the Go side gives one command before answering anyway
BUILD_TIMEOUT = 900.0  # a cold build downloads the library and its dependencies
BATCH_BYTES = 1_000_000  # both libraries' default batch (and record) limit


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kop" / "conformance-go"


def _size(r: Rec) -> int:
    return (
        len(r.key or b"") + len(r.value or b"") + sum(len(k) + len(v or b"") for k, v in r.headers)
    )


def _runs(recs: list[Rec]) -> list[list[Rec]]:
    """`recs` in order, with each record over BATCH_BYTES in a produce call of its own.

    franz-go and Sarama bound a batch by the same setting that bounds a record
    (ProducerBatchMaxBytes, Producer.MaxMessageBytes): raised for large records, it
    lets records share a batch above the topic's max.message.bytes, refused whole,
    or not, depending on when the batch happened to be flushed. Java and librdkafka
    send a record larger than batch.size in a batch of its own; so does this."""
    runs: list[list[Rec]] = [[]]
    for r in recs:
        if _size(r) > BATCH_BYTES:
            runs += [[r], []]
        else:
            runs[-1].append(r)
    return [run for run in runs if run]


class GoDriver:
    """A client library driven through its Go program (built once, run per call)."""

    name: str
    codecs: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
    source: str  # the folder under go/
    max_timestamp = True

    def __init__(self) -> None:
        self._binary: Path | None = None
        self._lock = threading.Lock()
        self._program = Program(self.name, lambda: [str(self.binary())])

    # -- building ---------------------------------------------------------------

    def fingerprint(self) -> str:
        """A hash of what the binary is built from: go.mod, go.sum and the Go sources,
        its own and the shared wire package's."""
        h = hashlib.sha256()
        for src in (SOURCES / self.source, SOURCES / "wire"):
            for f in sorted([*src.glob("go.*"), *src.glob("*.go")]):
                h.update(f"{src.name}/{f.name}".encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()[:16]

    def binary(self) -> Path:
        """The built program, building it first when this version is not cached."""
        with self._lock:
            if self._binary is None or not self._binary.exists():
                self._binary = self._build()
            return self._binary

    def _build(self) -> Path:
        where = cache_root() / f"{self.name}-{self.fingerprint()}"
        exe = where / self.source
        if exe.exists():
            return exe
        go = shutil.which("go")
        if go is None:
            raise RuntimeError(
                f"the {self.name} driver is a Go program: `go` (1.26 or newer) is not on PATH"
            )
        where.mkdir(parents=True, exist_ok=True)
        print(
            f"[conformance] building the {self.name} driver (go build, once per version) ...",
            end=" ",
            file=sys.stderr,
            flush=True,
        )
        started = time.monotonic()
        # Built beside its final name, then renamed: a concurrent build never
        # leaves a half-written binary behind.
        fd, tmp = tempfile.mkstemp(prefix=".build-", dir=where)
        os.close(fd)
        try:
            done = subprocess.run(
                [go, "build", "-mod=readonly", "-buildvcs=false", "-o", tmp, "."],
                cwd=SOURCES / self.source,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
            )
            if done.returncode != 0:
                print("failed", file=sys.stderr, flush=True)
                raise RuntimeError(
                    f"building the {self.name} driver (go build in {SOURCES / self.source}) "
                    f"failed:\n{(done.stderr or done.stdout).strip()[-3000:]}"
                )
            os.replace(tmp, exe)
        except subprocess.TimeoutExpired as exc:
            print("timed out", file=sys.stderr, flush=True)
            raise RuntimeError(
                f"building the {self.name} driver took over {BUILD_TIMEOUT:.0f} s"
            ) from exc
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        print(f"done in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return exe

    # -- calling ----------------------------------------------------------------

    def _call(self, op: str, bootstrap: str, timeout: float = CALL_TIMEOUT, **fields: Any) -> Any:
        """Run one command; its answer, or ClientError with the library's error name."""
        command = {"op": op, "bootstrap": bootstrap, "timeout": timeout, **fields}
        return self._program.call(command, timeout)

    # -- the Client protocol ----------------------------------------------------

    def produce(
        self,
        bootstrap: str,
        topic: str,
        recs: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        max_request_bytes: int = 1 << 20,
    ) -> list[int]:
        offsets: list[int] = []
        for run in _runs(recs):
            got = self._call(
                "produce",
                bootstrap,
                topic=topic,
                records=[to_wire(r) for r in run],
                compression=compression or "none",
                idempotent=idempotent,
                max_request_bytes=max_request_bytes,
            )
            offsets += [int(o) for o in got["offsets"]]
        return offsets

    def consume(
        self, bootstrap: str, topic: str, n: int, *, partition: int = 0, start: int = 0
    ) -> list[Rec]:
        got = self._call(
            "consume", bootstrap, topic=topic, partition=partition, start=start, n=n, within=30
        )
        return [from_wire(d) for d in got["records"]]

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        if spec == "max-timestamp" and not self.max_timestamp:
            raise Unsupported(f"{self.name} has no max-timestamp lookup")
        got = self._call("list_offset", bootstrap, topic=topic, partition=partition, spec=spec)
        return int(got["offset"])

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        """Subscribe as a member of `group`, take `n` records, commit after them, leave."""
        got = self._call(
            "group_consume", bootstrap, timeout=90, topic=topic, group=group, n=n, within=60
        )
        return [from_wire(d) for d in got["records"]]

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        got = self._call("committed", bootstrap, topic=topic, group=group, partition=partition)
        return None if got["offset"] is None else int(got["offset"])

    def txn_flow(self, bootstrap: str, topic: str, txn_id: str) -> str:
        """conformance/clients/transactional.py's flow (go/<lib>/txn.go); how the
        zombie was fenced."""
        got = self._call("txn_flow", bootstrap, topic=topic, transactional_id=txn_id)
        return str(got["fenced"])

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None], **conf: Any,
    ) -> None:  # fmt: skip
        """`conf`: a `revoked` list collects each revocation; `group.protocol` picks the
        protocol (what the Go program knows of it, else UNSUPPORTED); nothing else."""
        revoked: list[list[int]] | None = conf.pop("revoked", None)
        protocol = conf.pop("group.protocol", "")
        if conf:
            raise Unsupported(f"{self.name} member: no settings {sorted(conf)}")
        command = {"op": "member", "bootstrap": bootstrap, "topic": topic, "group": group,
                   "protocol": protocol}  # fmt: skip
        self._program.member(command, stop, report, revoked)


class FranzGo(GoDriver):
    """franz-go: kgo's producer and consumer, kadm for offsets (ListMaxTimestampOffsets);
    its transactional client and GroupTransactSession."""

    name = "franz-go"
    source = "franz"

    def group_transact(
        self, bootstrap: str, source: str, output: str, group: str, txn_id: str, n: int
    ) -> dict[str, Any]:
        """GroupTransactSession copying `n` records of `source` to `output`."""
        return dict(self._call(
            "group_transact", bootstrap, timeout=120, topic=source, output=output,
            group=group, transactional_id=txn_id, n=n,
        ))  # fmt: skip


class Sarama(GoDriver):
    """Sarama with its default Config: SyncProducer (transactional too), Consumer,
    ConsumerGroup, Client.GetOffset and ClusterAdmin.ListConsumerGroupOffsets."""

    name = "sarama"
    source = "sarama"
    max_timestamp = False  # GetOffset/ListOffsets take only oldest, newest or a time
