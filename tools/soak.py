"""Soak the partition-log simulation: run the hypothesis state machine of
tests/sim/test_log_machine.py with fresh seeds for as long as asked.

    .venv/bin/python tools/soak.py --minutes 30 [--examples 300] [--steps 100]

Prints a line per run with the steps done and the rate; on a failure, the seed
and the command that replays it, and exits 1. `make soak` runs it.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MACHINE = "tests/sim/test_log_machine.py"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--examples", type=int, default=300, help="state-machine runs per seed")
    parser.add_argument("--steps", type=int, default=100, help="steps per state-machine run")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    total_steps = 0
    runs = 0
    while time.monotonic() < deadline:
        seed = random.randrange(1 << 32)
        with tempfile.NamedTemporaryFile("r", suffix=".steps") as counts:
            env = {
                **os.environ,
                "KOP_SIM_EXAMPLES": str(args.examples),
                "KOP_SIM_STEPS": str(args.steps),
                "KOP_SIM_COUNT_FILE": counts.name,
            }
            command = [
                sys.executable, "-m", "pytest", MACHINE, "-q", "-p", "no:cacheprovider",
                f"--hypothesis-seed={seed}",
            ]  # fmt: skip
            result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
            steps = sum(int(line) for line in counts.read().split() if line.strip())
        runs += 1
        total_steps += steps
        elapsed = time.monotonic() - started
        print(
            f"[soak] run {runs} seed {seed}: {steps} steps; total {total_steps} steps in "
            f"{elapsed:.0f}s ({total_steps / max(elapsed, 1e-9):.0f} steps/s)",
            flush=True,
        )
        if result.returncode != 0:
            # The falsifying steps and the assertion, not the log noise around them.
            keep = [
                line
                for line in result.stdout.splitlines()
                if "state." in line or "Error" in line or "assert" in line.lower()
            ]
            print("\n".join(keep[-200:]) or result.stdout[-6000:], result.stderr[-2000:])
            replay = " ".join(
                [f"KOP_SIM_EXAMPLES={args.examples}", f"KOP_SIM_STEPS={args.steps}", *command]
            )
            print(f"[soak] FAILED with seed {seed}; replay: {replay}")
            return 1
    print(f"[soak] passed: {runs} runs, {total_steps} steps, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
