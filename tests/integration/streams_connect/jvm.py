"""JVM applications as subprocesses, and waiting on them with a deadline.

Each JVM writes stdout and stderr to a log file of its own; a failed wait quotes
the first ERROR lines and the tail of that log, which is what tells a kop gap
apart from a slow start.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PROGRESS_EVERY = 5.0


def build_classpath() -> str:
    """tools/apps.py build (a no-op when current); its last stdout line is the classpath."""
    assert shutil.which("java") and shutil.which("mvn"), "Java 17 and Maven are required"
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "apps.py"), "build"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(f"[apps] build current after {time.monotonic() - started:.1f} s", flush=True)
    return run.stdout.strip().splitlines()[-1]


class JavaApp:
    """One JVM (a main class and its arguments), startable again after a stop or a kill."""

    def __init__(
        self,
        name: str,
        classpath: str,
        main: str,
        args: Sequence[str],
        log_dir: Path,
        fatal: str = r"$^",
    ) -> None:
        self.name = name
        self.fatal = re.compile(fatal, re.MULTILINE)  # a line after which it will not recover
        self.cmd = [
            "java", "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={HERE / 'log4j2.xml'}",
            "-cp", classpath, main, *args,
        ]  # fmt: skip
        self.log_path = log_dir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._offset = 0  # where this run's output begins in the log

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is running"
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            log.write(f"==== {' '.join(self.cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.log_path.parent, env={**os.environ, "KAFKA_HEAP_OPTS": ""},
            )  # fmt: skip

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def failed(self) -> str | None:
        """Why this run is over (it exited, or logged a fatal line), else None."""
        if not self.running():
            return f"exited ({self.proc.returncode if self.proc else None})"
        fatal = self.fatal.search(self.run_output())
        return f"logged {fatal.group(0)!r}" if fatal else None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (the JVM's shutdown hooks close the application cleanly), then SIGKILL;
        SIGKILL at once after a fatal line."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        if self.fatal.search(self.run_output()):  # Connect then hangs in its shutdown hook
            self.kill9()
            return -signal.SIGKILL
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(30)

    def run_output(self) -> str:
        """This run's output so far."""
        with open(self.log_path, "rb") as log:
            log.seek(self._offset)
            return log.read().decode(errors="replace")

    def diagnosis(self, errors: int = 12, tail: int = 20) -> str:
        """The first ERROR/exception lines of the whole log, then its last lines above INFO."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        lines = text.splitlines()
        first = [line for line in lines if re.search(r"\b(ERROR|FATAL)\b|Exception: ", line)]
        last = [line for line in lines if "] INFO " not in line and line[:4] != "\tat "]
        return (
            f"--- {self.name}: first errors ({self.log_path})\n"
            + "\n".join(first[:errors])
            + f"\n--- {self.name}: last lines above INFO\n"
            + "\n".join(last[-tail:])
        )


def wait_until(
    what: str,
    done: Callable[[], bool],
    timeout: float,
    progress: Callable[[], str] = lambda: "",
    apps: Sequence[JavaApp] = (),
) -> float:
    """Poll `done` until true (returns the seconds it took); a progress line every few
    seconds; fails at the deadline, or at once if one of `apps` fails meanwhile."""
    start = time.monotonic()
    deadline, next_line = start + timeout, start + PROGRESS_EVERY
    while not done():
        now = time.monotonic()
        for app in apps:
            why = app.failed()
            if why:
                raise AssertionError(
                    f"{app.name} {why} while waiting for {what}\n{app.diagnosis()}"
                )
        if now > deadline:
            diagnosis = "\n".join(app.diagnosis() for app in apps)
            raise AssertionError(f"no {what} within {timeout:.0f} s: {progress()}\n{diagnosis}")
        if now >= next_line:
            next_line = now + PROGRESS_EVERY
            print(f"[apps] waiting for {what}, {now - start:.0f} s: {progress()}", flush=True)
        time.sleep(0.25)
    return time.monotonic() - start
