"""kcat (librdkafka's command-line tool, Debian package `kcat`), as a shell user would
run it. tools/install_kcat.sh installs it (`make kcat`, a step of `make test` and
`make conformance`).

What kcat cannot express is Unsupported, and only when a call needs it:
- produce: a record's timestamp (kcat stamps records itself), a header value with a
  NUL byte or a header name with '=' (headers are -H name=value arguments), a null
  key with an empty value (kcat skips an empty input). Partition, headers and the
  null mode (-Z) are per invocation, so records go out in consecutive runs that share
  them, one kcat -P each, in order;
- list_offset: max-timestamp (kcat's -Q takes a time; -1 and -2 are latest/earliest).

Offsets of produced records come from kcat's delivery reports (-v -v), consumed
records from its JSON envelope (-J), whose strings carry the bytes as they are
(only control characters escaped), so they are read as latin-1, which is exact. The
group's committed offset is where `kcat -C -o stored` starts for that group.id (kcat
has no query for it); -G is a group member (group_consume, member_loop).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import signal
import string
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from conformance.clients.base import ClientError, OffsetSpec, Unsupported
from conformance.model import Rec

KCAT = "kcat"
DELIVERED = re.compile(rb"Message delivered to partition (-?\d+) \(offset (-?\d+)\)")
FAILED = re.compile(rb"Delivery failed for message: (.*)")
ERROR = re.compile(rb"% ERROR: (.*?)(?:: terminating)?$", re.M)
STOPPED = re.compile(rb"Reached stop timestamp for topic .* \[(\d+)\] at offset (-?\d+)")
REBALANCED = re.compile(rb"rebalanced .*?: (assigned|revoked): (.*)")
AT_END = re.compile(rb"Reached end of topic .* \[(\d+)\] at offset (-?\d+)")
NOTHING_COMMITTED = b"no previously committed offset available"


def _binary() -> str:
    found = shutil.which(KCAT)
    if found is None:
        raise RuntimeError("kcat is not installed: run tools/install_kcat.sh (make kcat)")
    return found


def _run(
    args: list[str | bytes], stdin: bytes = b"", within: float = 60.0
) -> tuple[int, bytes, bytes]:
    """kcat's exit code, stdout and stderr; SIGTERM past `within` (kcat then stops
    cleanly: a group member commits and leaves, output so far is flushed)."""
    proc = subprocess.Popen(
        [_binary(), "-F", "none", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(stdin, timeout=within)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise TimeoutError(f"kcat {args[0]!s}: did not stop") from None
    return proc.returncode, out, err


def _failure(code: int, err: bytes, what: str) -> Exception:
    """The error kcat reported (a ClientError), or a RuntimeError when it said none."""
    said = FAILED.search(err) or ERROR.search(err)
    if said:
        return ClientError(said.group(1).decode("latin-1").strip())
    tail = " | ".join(err.decode("latin-1").strip().splitlines()[-3:])
    return RuntimeError(f"kcat {what}: exit {code}: {tail}")


def _delimiter(data: list[bytes]) -> bytes:
    """A delimiter that occurs in none of `data` (kcat's -D and -K take strings)."""
    while True:
        delim = "".join(secrets.choice(string.ascii_letters) for _ in range(12)).encode()
        if not any(delim in d for d in data):
            return delim


def _text(s: str | None) -> bytes | None:
    return None if s is None else s.encode("latin-1")


def _rec(line: bytes) -> Rec:
    m: dict[str, Any] = json.loads(line.decode("latin-1"))
    flat = m.get("headers") or []
    headers = tuple((flat[i].encode("latin-1").decode(), _text(flat[i + 1]))
                    for i in range(0, len(flat), 2))  # fmt: skip
    return Rec(
        _text(m["key"]),
        _text(m["payload"]),
        headers,
        int(m.get("ts", -1)),
        int(m["offset"]),
        int(m["partition"]),
    )


def _records(out: bytes) -> list[Rec]:
    return [_rec(line) for line in out.split(b"\n") if line.strip()]


def _mode(r: Rec) -> str:
    """The -Z setting a record needs: 'null' (-Z), 'plain' (no -Z) or 'any'."""
    if r.key is None and r.value == b"":
        raise Unsupported("kcat skips an empty input: a null key with an empty value")
    if r.value is None:
        if r.key == b"":
            raise Unsupported("kcat -Z turns an empty key into null: empty key, null value")
        return "null"
    return "plain" if r.key == b"" or r.value == b"" else "any"


def _line(r: Rec, key_delim: bytes) -> bytes:
    """One record as kcat -P -K reads it: no key delimiter means a null key; with -Z an
    empty key or value is null."""
    if r.key is None and r.value is not None:
        return r.value
    return (r.key or b"") + key_delim + (r.value or b"")


Run = tuple[int, tuple[tuple[str, bytes | None], ...], str, list[int]]


def _runs(recs: list[Rec]) -> list[Run]:
    """Consecutive records sharing partition, headers and a -Z setting: (partition,
    headers, -Z setting, record indexes), one kcat -P each."""
    runs: list[Run] = []
    for i, r in enumerate(recs):
        mode = _mode(r)
        if runs:
            part, headers, run_mode, idx = runs[-1]
            both = run_mode if mode in ("any", run_mode) else mode if run_mode == "any" else None
            if (part, headers) == (r.partition, r.headers) and both is not None:
                runs[-1] = (part, headers, both, [*idx, i])
                continue
        runs.append((r.partition, r.headers, mode, [i]))
    return runs


class Kcat:
    name = "kcat"
    codecs: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")

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
        if any(r.timestamp >= 0 for r in recs):
            raise Unsupported("kcat cannot set a record's timestamp")
        for r in recs:
            for name, value in r.headers:
                if "=" in name or "\0" in name or (value is not None and b"\0" in value):
                    raise Unsupported("kcat -H cannot carry a NUL byte, or '=' in a header name")
        data = [b for r in recs for b in (r.key, r.value) if b]
        delim = _delimiter(data)
        key_delim = _delimiter([*data, delim])
        offsets: list[int] = [-1] * len(recs)
        for partition, headers, mode, idx in _runs(recs):
            args: list[str | bytes] = ["-P", "-b", bootstrap, "-t", topic, "-p", str(partition)]
            args += ["-v", "-v", "-D", delim.decode(), "-K", key_delim.decode()]
            args += ["-X", "acks=all", "-X", f"enable.idempotence={str(idempotent).lower()}"]
            args += ["-X", f"compression.codec={compression or 'none'}"]
            args += ["-X", f"message.max.bytes={max_request_bytes}"]  # also kcat's input buffer
            args += ["-X", "message.timeout.ms=30000"]
            for k, v in headers:  # as bytes: a value reaches kcat unchanged
                args += ["-H", k.encode() if v is None else k.encode() + b"=" + v]
            if mode == "null":
                args.append("-Z")
            stdin = b"".join(_line(recs[i], key_delim) + delim for i in idx)
            code, _, err = _run(args, stdin)
            got = [int(o) for p, o in DELIVERED.findall(err) if int(p) == partition]
            if code != 0 or len(got) != len(idx):
                raise _failure(code, err, "-P")
            for i, offset in zip(idx, got, strict=True):
                offsets[i] = offset
        return offsets

    def consume(
        self, bootstrap: str, topic: str, n: int, *, partition: int = 0, start: int = 0
    ) -> list[Rec]:
        if n <= 0:
            return []  # kcat's -c 0 means no limit
        args = ["-C", "-b", bootstrap, "-t", topic, "-p", str(partition), "-o", str(start)]
        code, out, err = _run([*args, "-c", str(n), "-e", "-J", "-q"], within=30)
        if code not in (0, -signal.SIGTERM):
            raise _failure(code, err, "-C")
        return _records(out)

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        if spec == "max-timestamp":
            raise Unsupported("kcat -Q looks offsets up by time only")
        when = {"latest": -1, "earliest": -2}.get(spec, spec) if isinstance(spec, str) else spec
        code, out, err = _run(["-Q", "-b", bootstrap, "-t", f"{topic}:{partition}:{when}", "-J"])
        if code != 0:
            raise _failure(code, err, "-Q")
        answer = json.loads(out.decode("latin-1"))[topic][str(partition)]
        if "error" in answer:
            raise ClientError(answer["error"])
        return int(answer["offset"])

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        """kcat -G: its consumer commits what it handed out when it closes (after -c n)."""
        if n <= 0:
            return []
        args = ["-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest"]
        code, out, err = _run([*args, "-c", str(n), "-J", "-q", topic], within=60)
        if code not in (0, -signal.SIGTERM):
            raise _failure(code, err, "-G")
        return _records(out)

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        """Where `kcat -C -o stored` starts for the group.id. A stop time every record is
        at or past (-o e@-1) stops it at the first record before printing or storing it
        (with enable.auto.offset.store=false nothing else is stored), and it names that
        offset; at the end (-e) it names the end offset. Its legacy consumer commits what
        it stored when it stops, and at the end it stores the end itself: the same offset
        again, except at offset 0, where it stores 1 (an off-by-one in kcat), so that
        case is Unsupported."""
        args = ["-C", "-b", bootstrap, "-t", topic, "-p", str(partition), "-o", "stored"]
        args += ["-o", "e@-1", "-e", "-X", f"group.id={group}", "-X", "auto.offset.reset=error"]
        code, _, err = _run([*args, "-X", "enable.auto.offset.store=false", "-J"], within=30)
        if NOTHING_COMMITTED in err:
            return None
        if code != 0:
            raise _failure(code, err, "-C -o stored")
        stopped = STOPPED.search(err)
        if stopped:
            return int(stopped.group(2))
        end = AT_END.search(err)
        if end is None:
            raise RuntimeError(f"kcat -C -o stored: no start offset reported: {err[-300:]!r}")
        if int(end.group(2)) == 0:
            raise Unsupported("kcat -C -o stored commits offset 1 at the end of an empty log")
        return int(end.group(2))

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None],
    ) -> None:  # fmt: skip
        """kcat -G stays a member, printing each assignment and revocation; SIGTERM makes
        it close (and leave the group)."""
        args = ["-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest"]
        args += ["-X", "enable.auto.commit=false", "-J", topic]
        proc = subprocess.Popen(
            [_binary(), "-F", "none", *args], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None
        said: list[bytes] = []
        err = proc.stderr

        def read() -> None:
            for line in err:
                said.append(line)
                change = REBALANCED.search(line)
                if change:
                    parts = frozenset(int(p) for p in re.findall(rb"\[(\d+)\]", change.group(2)))
                    report(parts if change.group(1) == b"assigned" else frozenset())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            while not stop.wait(0.2) and proc.poll() is None:
                pass
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # kcat closes its consumer: it leaves
            proc.wait(60)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError("kcat -G: did not leave within 60 s") from exc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join(10)
        if proc.returncode not in (0, -signal.SIGTERM):
            raise _failure(proc.returncode, b"".join(said), "-G")
