"""`kop standalone` stops only a Pulsar it started: one that tools/pulsar.py started
and that is slow to answer is not a Pulsar kop may stop when it exits (the integration
suite's Pulsar was stopped so, under load, and the next restart of it failed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kop.cli.main import pulsar_running

TOOL_SAYS = {
    "healthy": (0, "healthy: Pulsar 4.0.7 on port 8080 (started by this tool, pid 7)"),
    "slow": (
        1,
        "not healthy: Pulsar 4.0.7 on port 8080 is not healthy yet; a Pulsar started by this "
        "tool is running (pid 7), log /x/pulsar.log",
    ),
    "none": (1, "not healthy: nothing answers HTTP on port 8080"),
}


@pytest.mark.parametrize(("state", "running"), [("healthy", True), ("slow", True), ("none", False)])
def test_a_pulsar_there_before_kop_is_not_kops_to_stop(
    tmp_path: Path, state: str, running: bool
) -> None:
    code, said = TOOL_SAYS[state]
    tool = tmp_path / "pulsar.py"
    tool.write_text(f"import sys\nprint({said!r})\nsys.exit({code})\n")
    assert pulsar_running(tool) is running
