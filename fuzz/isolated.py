"""Run a decoder on untrusted inputs in a worker process.

An abort in native code (Rust's failed allocation, a C assertion) ends the
process that runs it, and no `except` can stop that. The worker is that
process: the parent sends it one input at a time and reads back how the call
ended; when the worker dies or stops answering, the input that did it is known.
Run as `python -m fuzz.isolated module:function`, it is the worker itself.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

REPO = Path(__file__).resolve().parents[1]
_LEN = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one call ended: `raised` is the exception's type name, or None."""

    raised: str | None
    detail: str
    seconds: float


class WorkerDied(Exception):
    """The worker ended (an abort, a signal) while running `data`."""

    def __init__(self, data: bytes, returncode: int | None, stderr: str) -> None:
        super().__init__(f"worker ended with {returncode} on a {len(data)}-byte input: {stderr}")
        self.data = data
        self.returncode = returncode
        self.stderr = stderr


class WorkerHung(Exception):
    """The worker did not answer within the time allowed for one input."""

    def __init__(self, data: bytes, seconds: float) -> None:
        super().__init__(f"no answer in {seconds:.0f} s on a {len(data)}-byte input")
        self.data = data


class IsolatedCalls:
    """`target(data)` for each input, in a worker process started on first use and
    again after it died."""

    def __init__(self, target: str, timeout_s: float = 20.0) -> None:
        self._target = target
        self._timeout = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr_path = (
            Path(os.environ.get("TMPDIR", "/tmp")) / f"fuzz-worker-{os.getpid()}-{id(self)}.err"
        )

    def __enter__(self) -> IsolatedCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, data: bytes) -> Outcome:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(_LEN.pack(len(data)) + data)
            proc.stdin.flush()
        except BrokenPipeError:
            raise self._died(data) from None
        ready, _, _ = select.select([proc.stdout], [], [], self._timeout)
        if not ready:
            self.close()
            raise WorkerHung(data, self._timeout)
        line = proc.stdout.readline()
        if not line:
            raise self._died(data)
        answer = json.loads(line)
        return Outcome(answer["raised"], answer["detail"], answer["seconds"])

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            err = open(self._stderr_path, "wb")  # noqa: SIM115 - the child's stderr
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "fuzz.isolated", self._target],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=REPO,
            )
            err.close()
        return self._proc

    def _died(self, data: bytes) -> WorkerDied:
        assert self._proc is not None
        code = self._proc.wait()
        self._proc = None
        text = self._stderr_path.read_text(errors="replace")
        return WorkerDied(
            data, code, text[:1500] + ("\n...\n" + text[-500:] if len(text) > 2000 else text[1500:])
        )


def resolve(target: str) -> Callable[[bytes], Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _serve(target: Callable[[bytes], Any], stdin: BinaryIO, stdout: BinaryIO) -> None:
    while head := stdin.read(_LEN.size):
        (size,) = _LEN.unpack(head)
        data = stdin.read(size)
        started = time.perf_counter()
        try:
            result = target(data)
            raised, detail = None, type(result).__name__
        except Exception as exc:  # what kind it was is the answer
            raised, detail = type(exc).__name__, str(exc)[:300]
        seconds = time.perf_counter() - started
        stdout.write(json.dumps({"raised": raised, "detail": detail, "seconds": seconds}).encode())
        stdout.write(b"\n")
        stdout.flush()


if __name__ == "__main__":
    _serve(resolve(sys.argv[1]), sys.stdin.buffer, sys.stdout.buffer)
