"""Run a decoder on inputs in a child process, so that what would kill the process
(an abort in native code, a segfault, a memory blow-up) fails a test or is kept by
the fuzzer, naming the input, instead of killing pytest or the fuzzer.

    with Isolated("tests.unit.decoder_targets:produce_kafka",
                  allowed=["kop.protocol.errors:KafkaError"]) as checker:
        checker.check(data)          # "ok" / "KafkaError: ..."; or raises
        checker.run_batch(inputs)    # -> BatchResult, up to the first failure

The child imports `target` ("module:function", called with one `bytes`) and
answers each input with what happened: returned ("ok"), raised an `allowed`
exception (checked with isinstance in the child; "Type: message"), or raised
something else (Unexpected, with its traceback). It runs under an address-space
limit (`memory_bytes`), so an allocation sized from a hostile length fails at
once rather than swapping the machine: in Python a MemoryError (Unexpected), in
Rust an abort (Crashed). Each input has `timeout_s`; a child past it is killed
(Hung). After a crash or hang the next call starts a new child. One child serves
many calls, so a hypothesis test can check each example in it for about the
cost of a pipe round trip.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
_LEN = struct.Struct(">I")
_EOF = object()
_TIMEOUT = object()


class CheckFailed(AssertionError):
    """The decoder did something other than return or raise an allowed error."""

    def __init__(self, message: str, data: bytes) -> None:
        super().__init__(f"{message}\ninput ({len(data)} bytes): {data[:2048].hex()}")
        self.data = data


class Crashed(CheckFailed):
    """The child died on the input (return code < 0: killed by that signal)."""


class Hung(CheckFailed):
    """The input took longer than the timeout."""


class Unexpected(CheckFailed):
    """The decoder raised an exception not in `allowed`."""


@dataclass
class BatchResult:
    outcomes: list[str] = field(default_factory=list)  # per input: what `check` returned
    failure: CheckFailed | None = None  # the first input that failed, if any
    failed_at: int | None = None


class Isolated:
    def __init__(
        self,
        target: str,
        *,
        allowed: Sequence[str] = (),
        memory_bytes: int = 2 << 30,
        timeout_s: float = 60.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.target = target
        self.allowed = list(allowed)
        self.memory_bytes = memory_bytes
        self.timeout_s = timeout_s
        self._env = {**os.environ, **(env or {})}
        self._child: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    def __enter__(self) -> Isolated:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            with contextlib.suppress(OSError):
                assert child.stdin is not None
                child.stdin.close()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def check(self, data: bytes) -> str:
        """What the decoder did with `data`: "ok", or "Type: message" of the allowed
        exception it raised. Raises Crashed, Hung or Unexpected."""
        child = self._start()
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(_LEN.pack(len(data)) + data)
            child.stdin.flush()
        except BrokenPipeError:
            pass  # it died; reading says how
        reply = self._read_reply(child)
        if not isinstance(reply, str):
            self._child = None
            if reply is _TIMEOUT:
                child.kill()
                child.wait()
                raise Hung(f"{self.target} took over {self.timeout_s}s", data)
            child.wait()
            err = self._stderr_tail()
            raise Crashed(f"{self.target} killed its process ({child.returncode}):\n{err}", data)
        kind, _, text = reply.partition("\n")
        if kind == "unexpected":
            raise Unexpected(f"{self.target} raised:\n{text}", data)
        return text

    def run_batch(self, inputs: Iterable[bytes]) -> BatchResult:
        """Every input in turn, up to the first that fails."""
        result = BatchResult()
        for i, data in enumerate(inputs):
            try:
                result.outcomes.append(self.check(data))
            except CheckFailed as exc:
                result.failure, result.failed_at = exc, i
                break
        return result

    def _start(self) -> subprocess.Popen[bytes]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        args = [self.target, str(self.memory_bytes), *self.allowed]
        if self._stderr is not None:
            self._stderr.close()
        # a file, not a pipe: a pipe nobody reads could fill up and stall the child
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close/_start)
        self._child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ROOT,
            env=self._env,
        )
        return self._child

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read()[-4000:].decode(errors="replace")

    def _read_reply(self, child: subprocess.Popen[bytes]) -> str | object:
        """The child's answer, or _EOF when it died, or _TIMEOUT."""
        assert child.stdout is not None
        fd = child.stdout.fileno()
        deadline = time.monotonic() + self.timeout_s
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                if len(buf) >= _LEN.size:
                    (n,) = _LEN.unpack_from(buf)
                    if len(buf) >= _LEN.size + n:
                        return buf[_LEN.size : _LEN.size + n].decode()
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return _TIMEOUT
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return _EOF
                buf += chunk


# The child: reads [u32 size][input] from stdin, answers [u32 size][kind "\n" text].
_CHILD = r"""
import importlib, resource, struct, sys, traceback
target, memory, *allowed = sys.argv[1:]
if int(memory) > 0:
    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
def load(ref):
    module, _, name = ref.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj
fn = load(target)
kinds = tuple(load(a) for a in allowed)
inp, out = sys.stdin.buffer, sys.stdout.buffer
def reply(kind, text):
    body = (kind + "\n" + text).encode("utf-8", "replace")
    out.write(struct.pack(">I", len(body)) + body)
    out.flush()
while True:
    head = inp.read(4)
    if len(head) < 4:
        break
    data = inp.read(struct.unpack(">I", head)[0])
    try:
        fn(data)
    except kinds as exc:
        reply("allowed", (type(exc).__name__ + ": " + str(exc))[:1000])
    except BaseException as exc:
        reply("unexpected", "".join(traceback.format_exception(exc))[-4000:])
    else:
        reply("ok", "ok")
"""
