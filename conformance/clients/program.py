"""Client libraries of other languages, each driven by a small program of its own:
one JSON command on stdin, one JSON answer on stdout ({"error": "<the library's
name for the failure>"} when the library reported one). Bytes travel as base64,
null as null. A group member is one long-running program that prints
{"assigned": [...]} lines until its stdin closes, then leaves the group."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.clients.base import ClientError
from conformance.model import Rec


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _bytes(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def to_wire(r: Rec) -> dict[str, Any]:
    return {
        "partition": r.partition,
        "key": _b64(r.key),
        "value": _b64(r.value),
        "headers": [[k, _b64(v)] for k, v in r.headers],
        "timestamp": r.timestamp,
    }


def from_wire(d: dict[str, Any]) -> Rec:
    return Rec(
        _bytes(d["key"]),
        _bytes(d["value"]),
        tuple((k, _bytes(v)) for k, v in d["headers"]),
        int(d["timestamp"]),
        int(d["offset"]),
        int(d["partition"]),
    )


class Program:
    """How to start the program: its command line and working directory."""

    def __init__(self, name: str, argv: Callable[[], list[str]], cwd: Path | None = None) -> None:
        self.name = name
        self._argv = argv
        self._cwd = cwd

    def call(self, command: dict[str, Any], within: float) -> dict[str, Any]:
        """Run one command; its answer, or ClientError with the library's error name.
        The program answers by itself within `within`; 15 s more is for a hang."""
        op = command.get("op")
        try:
            done = subprocess.run(
                self._argv(), cwd=self._cwd, input=json.dumps(command) + "\n",
                capture_output=True, text=True, timeout=within + 15,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"{self.name} {op}: no answer within {within + 15:.0f} s") from exc
        lines = done.stdout.strip().splitlines()
        answer = None
        with contextlib.suppress(json.JSONDecodeError, IndexError):
            answer = json.loads(lines[-1])
        if done.returncode != 0 or not isinstance(answer, dict):
            tail = (done.stderr or done.stdout).strip()[-2000:]
            raise RuntimeError(f"{self.name} {op}: the driver exited {done.returncode}: {tail}")
        if "error" in answer:
            raise ClientError(answer["error"])
        return answer

    def member(
        self, command: dict[str, Any], stop: threading.Event,
        report: Callable[[frozenset[int]], None], revoked: list[list[int]] | None = None,
    ) -> None:  # fmt: skip
        """Stay a group member until `stop` is set, reporting each assignment (and
        collecting each revocation in `revoked`, as partition lists)."""
        failures: list[str] = []
        with tempfile.TemporaryFile("w+") as errors:
            proc = subprocess.Popen(
                self._argv(), cwd=self._cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=errors, text=True,
            )  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            out = proc.stdout

            def read() -> None:
                for line in out:
                    event = json.loads(line)
                    if "assigned" in event:
                        report(frozenset(event["assigned"]))
                    elif "revoked" in event:
                        if revoked is not None:
                            revoked.append(sorted(event["revoked"]))
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
