"""Run the test suite (or the bench, or the fuzzer) with a healthy local Pulsar.

Reuses a Pulsar already answering on the configured ports; otherwise starts
one with tools/pulsar.py and stops it afterwards, keeping the exit code.

`--cluster` runs the cluster tier instead (tests/cluster): no standalone; its
fixture starts the production-shaped cluster of tools/pulsar_cluster.py (or
reuses one) and stops what it started.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
PULSAR = [sys.executable, str(TOOLS / "pulsar.py")]


# Besides pytest: `--bench` runs `python -m bench`, `--fuzz` runs `python -m fuzz`.
MODULES = {"--bench": "bench", "--fuzz": "fuzz"}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--cluster"]:
        command = [sys.executable, "-m", "pytest", "tests/cluster", *argv[1:]]
        return subprocess.run(command, cwd=TOOLS.parent).returncode
    module = MODULES.get(argv[0]) if argv else None
    args = argv[1:] if module else argv
    already = subprocess.run([*PULSAR, "status"], capture_output=True).returncode == 0
    if not already and subprocess.run([*PULSAR, "start", "--fresh"]).returncode != 0:
        return 2
    try:
        command = [sys.executable, "-m", module or "pytest", *args]
        return subprocess.run(command, cwd=TOOLS.parent).returncode
    finally:
        if not already:
            subprocess.run([*PULSAR, "stop"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
