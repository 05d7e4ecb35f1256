"""Apache Kafka's own command-line tools (Java kafka-clients inside), run from the
reference distribution by tools/kafka.py, against either target. Their output is
what a user reads, so it is compared after ids, hosts and times are normalized."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

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


def _kept(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith(_NOISE)


def normalize(ctx: Ctx, line: str) -> str:
    line = ctx.strip(line.rstrip())
    for pattern, replacement in _NORMALIZE:
        line = pattern.sub(replacement, line)
    return line
