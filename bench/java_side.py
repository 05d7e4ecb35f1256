"""A reference run with the Java Pulsar client (bench/java/PulsarPerf.java).

The Python pulsar-client spends most of a core per ~50k messages/s on per-message
Python overhead, so on a 2-core machine it cannot show what Pulsar itself takes.
The Java client from the broker's own classpath (the jars tools/pulsar.py cached)
can; its rows are a reference, skipped when java/javac or the jars are missing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import threading
from pathlib import Path

from bench.common import Progress, Values, Workload

client_log = logging.getLogger("bench.java")
SOURCE = Path(__file__).resolve().parent / "java" / "PulsarPerf.java"
PULSAR_VERSION = "4.0.7"


def _cache() -> Path:
    return Path(os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop").expanduser()


def pulsar_lib() -> Path | None:
    lib = _cache() / f"pulsar-{PULSAR_VERSION}" / "lib"
    return lib if any(lib.glob("pulsar-client-original-*.jar")) else None


class JavaClient:
    def __init__(self, service_url: str) -> None:
        java, javac, lib = shutil.which("java"), shutil.which("javac"), pulsar_lib()
        if not (java and javac and lib):
            raise RuntimeError("java/javac or the Pulsar jars (tools/pulsar.py fetch) missing")
        self.url = service_url
        self.java = java
        digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
        self.classes = _cache() / "bench-java" / digest
        self.classpath = f"{self.classes}:{lib}/*"
        if not (self.classes / "PulsarPerf.class").exists():
            self.classes.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [javac, "-nowarn", "-cp", f"{lib}/*", "-d", str(self.classes), str(SOURCE)],
                check=True, capture_output=True,
            )  # fmt: skip
        self._warm: tuple[str, int] | None = None
        self._warm_read: tuple[str, int] | None = None

    def _cmd(self, args: list[str]) -> list[str]:
        return [self.java, "-Xms256m", "-Xmx256m", "-cp", self.classpath, "PulsarPerf", *args]

    def _run(
        self, args: list[str], label: str, total: int, record_bytes: int, quiet: bool = False
    ) -> list[str]:
        proc = subprocess.Popen(
            self._cmd(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        prog = Progress(label, total, record_bytes)
        last = [0]

        def pump() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                if line.startswith("PROGRESS "):
                    last[0] = int(line.split()[1])
                    if not quiet:
                        prog.tick(last[0], force=True)
                elif line.strip():
                    client_log.info("%s", line.rstrip())

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        out, _ = proc.communicate()
        t.join(5)
        result = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not result:
            raise RuntimeError(f"java {args[0]} failed ({proc.returncode}); see clients.log")
        return result[-1].split()[1:]

    def _args(self, mode: str, topic: str, n: int, w: Workload) -> list[str]:
        return [mode, self.url, topic, str(n), str(w.value_bytes), str(w.key_bytes),
                str(w.linger_ms), str(w.batch_bytes), str(w.max_phase_s)]  # fmt: skip

    def produce(
        self, topic: str, w: Workload, values: Values, count: int, label: str, quiet: bool = False
    ) -> tuple[int, float, int]:
        if quiet:  # the warm-up call: done inside the measured JVM, before the clock starts
            self._warm = (topic, count)
            return count, 0.0, 0
        args = self._args("produce", topic, count, w)
        if self._warm is not None:
            args += [self._warm[0], str(self._warm[1])]
        n, secs, errors = self._run(args, label, count, w.record_bytes)
        return int(n), float(secs), int(errors)

    def consume(
        self, topic: str, w: Workload, values: Values, count: int, label: str, quiet: bool = False
    ) -> tuple[int, float, int, str]:
        if quiet:  # warm-up read: done inside the measured JVM, before the clock starts
            self._warm_read = (topic, count)
            return 0, 0.0, 0, ""
        args = self._args("consume", topic, count, w)
        if self._warm_read is not None:
            args += [self._warm_read[0], str(self._warm_read[1])]
        n, secs, errors = self._run(args, label, count, w.record_bytes)
        note = "" if int(n) == count else f"stalled at record {n}"
        return int(n), float(secs), int(errors), note

    def latency(
        self, topic: str, w: Workload, values: Values, label: str
    ) -> tuple[list[float], int]:
        fields = self._run(self._args("latency", topic, w.latency_records, w), label,
                           w.latency_records, w.record_bytes)  # fmt: skip
        return _floats(fields, 3), int(fields[2])

    def windows(self, topic: str, w: Workload) -> LoadedWindows:
        """A JVM with one producer and one reader on `topic` that runs windows of offered
        load on demand (`LoadedWindows.run`), so it stays warm between them."""
        return LoadedWindows(self._cmd(self._args("windows", topic, 0, w)))


def _floats(fields: list[str], i: int) -> list[float]:
    """A RESULT line's comma-separated latencies in field `i` (none: empty)."""
    return [float(x) for x in fields[i].split(",")] if len(fields) > i and fields[i] else []


class LoadedWindows:
    def __init__(self, cmd: list[str]) -> None:
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )  # fmt: skip
        threading.Thread(target=self._log_stderr, daemon=True).start()
        if self._line() != "READY":
            self.close()
            raise RuntimeError("java windows did not start; see clients.log")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _log_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            if line.strip() and not line.startswith("PROGRESS "):
                client_log.info("%s", line.rstrip())

    def _line(self) -> str:
        assert self._proc.stdout is not None
        while line := self._proc.stdout.readline():
            if line.startswith(("READY", "RESULT ")):
                return line.strip()
        return ""

    def run(self, count: int, rate: float) -> tuple[list[float], list[float], float, int]:
        """`count` records offered at `rate` a second: (send -> ack ms, send -> a reader
        has it ms, seconds, errors), the first fifth left out."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{count} {rate:.1f}\n")
        self._proc.stdin.flush()
        line = self._line()
        if not line.startswith("RESULT "):
            raise RuntimeError(f"java window failed ({self._proc.poll()}); see clients.log")
        fields = line.split()[1:]
        return _floats(fields, 3), _floats(fields, 4), float(fields[1]), int(fields[2])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> LoadedWindows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
