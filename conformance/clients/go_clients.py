"""The Go clients franz-go and Sarama, each through a small Go program of its own
(conformance/clients/go/<lib>/main.go) that takes one JSON command on stdin and
prints one JSON answer: {"offsets": ...}, {"records": ...}, {"offset": ...}, or
{"error": "<the library's name for the failure>"} (kerr's UNKNOWN_TOPIC_OR_PARTITION,
Sarama's ErrUnknownTopicOrPartition). Bytes travel as base64, null as null. A group
member (member_loop) is one long-running program printing {"assigned": [...]} lines
until its stdin closes. The programs are built with `go build` on first use into
~/.cache/kop/conformance-go/<lib>-<hash of go.mod, go.sum and *.go>, so a changed
source (or a bumped library) builds anew and an unchanged one never rebuilds."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
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

from conformance.clients.base import ClientError, OffsetSpec, Unsupported
from conformance.model import Rec

SOURCES = Path(__file__).resolve().parent / "go"
CALL_TIMEOUT = 60.0  # seconds the Go side gives one command before answering anyway
BUILD_TIMEOUT = 900.0  # a cold build downloads the library and its dependencies
BATCH_BYTES = 1_000_000  # both libraries' default batch (and record) limit


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kop" / "conformance-go"


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _bytes(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def _rec_out(r: Rec) -> dict[str, Any]:
    return {
        "partition": r.partition,
        "key": _b64(r.key),
        "value": _b64(r.value),
        "headers": [[k, _b64(v)] for k, v in r.headers],
        "timestamp": r.timestamp,
    }


def _rec_in(d: dict[str, Any]) -> Rec:
    return Rec(
        _bytes(d["key"]),
        _bytes(d["value"]),
        tuple((k, _bytes(v)) for k, v in d["headers"]),
        d["timestamp"],
        d["offset"],
        d["partition"],
    )


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

    # -- building ---------------------------------------------------------------

    def fingerprint(self) -> str:
        """A hash of what the binary is built from: go.mod, go.sum and the Go sources."""
        src = SOURCES / self.source
        h = hashlib.sha256()
        for f in sorted([src / "go.mod", src / "go.sum", *src.glob("*.go")]):
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
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
        exe = self.binary()
        try:
            done = subprocess.run(
                [str(exe)],
                input=json.dumps(command),
                capture_output=True,
                text=True,
                timeout=timeout + 15,  # the program answers by `timeout`; this is for a hang
            )
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"{self.name} {op}: no answer within {timeout + 15:.0f} s") from exc
        try:
            answer = json.loads(done.stdout)
        except json.JSONDecodeError:
            answer = None
        if done.returncode != 0 or not isinstance(answer, dict):
            raise RuntimeError(
                f"{self.name} {op}: the driver exited {done.returncode}: "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        if "error" in answer:
            raise ClientError(answer["error"])
        return answer

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
                records=[_rec_out(r) for r in run],
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
        return [_rec_in(d) for d in got["records"]]

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
        return [_rec_in(d) for d in got["records"]]

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        got = self._call("committed", bootstrap, topic=topic, group=group, partition=partition)
        return None if got["offset"] is None else int(got["offset"])

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None],
    ) -> None:  # fmt: skip
        """The program stays a member, printing {"assigned": [...]} on each change,
        until its stdin closes; then it leaves the group and prints {"left": true}."""
        command = {"op": "member", "bootstrap": bootstrap, "topic": topic, "group": group}
        failures: list[str] = []
        with tempfile.TemporaryFile("w+") as errors:
            proc = subprocess.Popen(
                [str(self.binary())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=errors, text=True,
            )  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            out = proc.stdout

            def read() -> None:
                for line in out:
                    event = json.loads(line)
                    if "assigned" in event:
                        report(frozenset(event["assigned"]))
                    elif "error" in event:
                        failures.append(event["error"])

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            try:
                proc.stdin.write(json.dumps(command) + "\n")
                proc.stdin.flush()
                while not stop.wait(0.2) and proc.poll() is None:
                    pass
                with contextlib.suppress(OSError):  # gone already when it failed
                    proc.stdin.close()  # the member leaves
                proc.wait(60)
            except subprocess.TimeoutExpired as exc:
                raise TimeoutError(f"{self.name} member: did not leave within 60 s") from exc
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                reader.join(10)
            if failures:
                raise ClientError(failures[0])
            if proc.returncode != 0:
                errors.seek(0)
                raise RuntimeError(
                    f"{self.name} member: the driver exited {proc.returncode}: "
                    f"{errors.read().strip()[-2000:]}"
                )


class FranzGo(GoDriver):
    """franz-go: kgo's producer and consumer, kadm for offsets (ListMaxTimestampOffsets)."""

    name = "franz-go"
    source = "franz"


class Sarama(GoDriver):
    """Sarama with its default Config: SyncProducer, Consumer, ConsumerGroup,
    Client.GetOffset and ClusterAdmin.ListConsumerGroupOffsets."""

    name = "sarama"
    source = "sarama"
    max_timestamp = False  # GetOffset/ListOffsets take only oldest, newest or a time
