"""Apache Kafka's own command-line tools (Java kafka-clients inside), run from the
reference distribution by tools/kafka.py, against either target. Their output is
what a user reads, so it is compared after ids, hosts and times are normalized."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from conformance.model import Ctx
from conformance.targets import TOOLS

_NORMALIZE = [
    (re.compile(r"TopicId: \S+"), "TopicId: <id>"),
    (re.compile(r"\b(Leader|Replicas|Isr|broker|id): ?\d+"), r"\1: <node>"),
    (re.compile(r'"broker":\d+'), '"broker":-1'),
    (re.compile(r"(127\.0\.0\.1|localhost):\d+"), "<broker>"),
    (re.compile(r"/(127\.0\.0\.1|0:0:0:0:0:0:0:1)"), "/<host>"),
    (
        re.compile(r"\b(console-consumer|consumer-[\w.-]+?)-[0-9a-f]{8}-[0-9a-f-]{27}"),
        r"\1-<member>",
    ),
    (re.compile(r"\bconsole-consumer-\d+"), "console-consumer-<n>"),
    (re.compile(r"\S*conformance-[\w.-]+-[0-9a-f]{8}\.props"), "<client config>"),  # sasl.py
]
_NOISE = ("Warning:", "SLF4J", "WARN ", "[20")  # deprecation notes and log lines


@dataclass(frozen=True)
class ToolRun:
    code: int
    out: list[str]


class JavaTools:
    name = "java-tools"
    codecs: tuple[str, ...] = ()

    def run(self, ctx: Ctx, tool: str, *args: str, stdin: str = "", timeout: float = 90) -> ToolRun:
        """`tool` against the context's broker: exit code and normalized output lines
        (stdout then stderr)."""
        done = subprocess.run(
            [sys.executable, str(TOOLS / "kafka.py"), "tool", tool, *args],
            input=stdin, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        lines = [*done.stdout.splitlines(), *done.stderr.splitlines()]
        return ToolRun(done.returncode, [normalize(ctx, line) for line in lines if _kept(line)])


class Running:
    """A tool left running (a console consumer that must be in its group before what it
    reads is produced): its output lines as they come, and its end."""

    def __init__(self, ctx: Ctx, tool: str, *args: str) -> None:
        self._ctx = ctx
        self._proc = subprocess.Popen(
            [sys.executable, str(TOOLS / "kafka.py"), "tool", tool, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if _kept(line):
                self.lines.append(normalize(self._ctx, line))

    def stop(self, timeout: float = 60) -> ToolRun:
        """SIGTERM (a console consumer closes its consumer, as on Ctrl-C), then its output."""
        self._proc.terminate()
        try:
            _, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, err = self._proc.communicate()
        self._reader.join(10)
        kept = [normalize(self._ctx, line) for line in err.splitlines() if _kept(line)]
        return ToolRun(self._proc.returncode, [*self.lines, *kept])


def _kept(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith(_NOISE)


def normalize(ctx: Ctx, line: str) -> str:
    line = ctx.strip(line.rstrip())
    for pattern, replacement in _NORMALIZE:
        line = pattern.sub(replacement, line)
    return line


JAVA_PROGRAMS = Path(__file__).resolve().parents[2] / "tests/integration/java"


def java_program(name: str, *args: str, timeout: float = 240) -> dict[str, object]:
    """One of the single-file Java programs the integration tests run
    (tests/integration/java/<name>.java) with Kafka 4.3.1's kafka-clients, as a cell's
    observation: its exit code and the lines it printed."""
    lib = Path(os.environ.get("KOP_CACHE_DIR", "~/.cache/kop")).expanduser() / "kafka-4.3.1/lib"
    done = subprocess.run(
        ["java", "-cp", f"{lib}/*", str(JAVA_PROGRAMS / f"{name}.java"), *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    return {"exit": done.returncode, "lines": done.stdout.splitlines()}
