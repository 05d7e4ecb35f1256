"""Rate lines while a job runs, beside Spark's console progress bar: one line per
phase with its records/s, and every `every_s` a line naming the running stages."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkContext


def say(text: str) -> None:
    print(f"[kop-spark] {text}", file=sys.stderr, flush=True)


class Phases:
    """Times the phases of a job; `timings` ends up in its report."""

    def __init__(self, sc: SparkContext, every_s: float = 15.0) -> None:
        self.timings: dict[str, dict[str, float]] = {}
        self._sc = sc
        self._every = every_s
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._started = time.monotonic()
        self._ticker.start()

    @contextmanager
    def phase(self, name: str, records: int | None = None) -> Iterator[dict[str, float]]:
        """`records` may also be filled in afterwards: `p["records"] = n`."""
        say(f"{name} ...")
        out: dict[str, float] = {} if records is None else {"records": records}
        t0 = time.monotonic()
        yield out
        out["seconds"] = round(time.monotonic() - t0, 3)
        if out.get("records"):
            out["records_per_s"] = round(out["records"] / max(out["seconds"], 1e-9), 1)
            say(
                f"{name}: {int(out['records']):,} records in {out['seconds']:.1f} s "
                f"({out['records_per_s']:,.0f} records/s)"
            )
        else:
            say(f"{name}: {out['seconds']:.1f} s")
        self.timings[name] = out

    def _tick(self) -> None:
        tracker = self._sc.statusTracker()
        while not self._stop.wait(self._every):
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            running = ", ".join(
                f"stage {s.stageId} {s.numCompletedTasks}/{s.numTasks} tasks"
                for s in stages
                if s is not None
            )
            elapsed = time.monotonic() - self._started
            say(f"{elapsed:.0f} s elapsed; {running or 'between stages'}")

    def close(self) -> None:
        self._stop.set()
