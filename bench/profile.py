"""Profile kop's produce and fetch paths with py-spy and summarise the hot spots.

`python -m bench --profile [--quick]` runs, for each entry format, one kop
process under `py-spy record --format raw` for the produce phase (warm-up
included) and another for the consume (fetch) phase, then prints the top
functions by self time and by inclusive time, as shares of the samples taken
while a kop thread held the GIL (`py-spy --gil`): the time kop's one event loop
thread (and the Pulsar client's callbacks into Python) spends running Python,
which is what limits a single-process asyncio server. Waiting in epoll and the
Pulsar C++ client's own threads are not in these numbers.

`python -m bench.profile FILE...` summarises existing collapsed-stack files.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

from bench import kafka_side
from bench.common import CpuMeter, Values, Workload, find_pulsar_pid, log
from bench.kop_process import REPO, KopProcess
from bench.namespaces import bench_namespaces

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")
_PREFIXES = ("site-packages/", str(REPO) + "/", "lib/python3.11/", "lib/python3.12/")
# frames present in nearly every stack (startup, click, the event loop itself):
# not interesting as "inclusive" hot spots
_PLUMBING_FILES = ("click/", "<frozen runpy>", "asyncio/runners.py", "<string>")
_PLUMBING = {
    "<module> (kop/cli/main.py)",
    "main (kop/cli/main.py)",
    "serve (kop/cli/main.py)",
    "_run (kop/cli/main.py)",
    "BaseEventLoop.run_forever (asyncio/base_events.py)",
    "BaseEventLoop.run_until_complete (asyncio/base_events.py)",
    "BaseEventLoop._run_once (asyncio/base_events.py)", "Handle._run (asyncio/events.py)",
}  # fmt: skip


def _plumbing(name: str) -> bool:
    file = name[name.rfind("(") + 1 : -1]
    return name in _PLUMBING or file.startswith(_PLUMBING_FILES)


def _short(path: str) -> str:
    for p in _PREFIXES:
        i = path.find(p)
        if i >= 0:
            return path[i + len(p) :]
    return path


def _name(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    return f"{m['func']} ({_short(m['file'])})"


def load(path: Path) -> list[tuple[list[str], int]]:
    stacks: list[tuple[list[str], int]] = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_name(f) for f in stack.split(";") if f]
        if frames and frames[0].startswith(("process ", "thread ")):
            frames = frames[1:]
        stacks.append((frames, int(count)))
    return stacks


RATE = 200  # samples/s


def _importing(frames: list[str]) -> bool:
    return any(f.startswith("_find_and_load (") for f in frames)


def summarise(path: Path, top: int = 12, wall_s: float | None = None, rate: int = 100) -> str:
    """Top functions by self and inclusive share of the samples, leaving out the
    samples spent importing modules (kop's start-up, which the profile includes)."""
    all_stacks = load(path)
    stacks = [(f, c) for f, c in all_stacks if not _importing(f)]
    total = sum(c for _, c in stacks)
    imports = sum(c for _, c in all_stacks) - total
    if not total:
        return f"{path.name}: no samples\n"
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for frames, count in stacks:
        own[frames[-1]] += count
        for f in set(frames):
            incl[f] += count
    head = f"{path.name}: {total:,} samples with the GIL held"
    if wall_s:
        head += f" over {wall_s:.1f} s (GIL busy {100 * total / rate / wall_s:.0f}% of the time)"
    head += f"; {imports:,} more samples importing modules (start-up) left out"
    lines = [head, "", "| self % | function | | inclusive % | function |"]
    lines.append("|---:|---|---|---:|---|")
    incl_top = [(f, c) for f, c in incl.most_common() if not _plumbing(f)][:top]
    own_top = own.most_common(top)
    for i in range(max(len(own_top), len(incl_top))):
        a = own_top[i] if i < len(own_top) else ("", 0)
        b = incl_top[i] if i < len(incl_top) else ("", 0)
        a_pct = f"{100 * a[1] / total:.1f}" if a[0] else ""
        b_pct = f"{100 * b[1] / total:.1f}" if b[0] else ""
        lines.append(f"| {a_pct} | `{a[0]}` | | {b_pct} | `{b[0]}` |")
    return "\n".join(lines) + "\n"


def profile_run(args: argparse.Namespace, w: Workload) -> int:
    from bench.run import RESULTS, _kop_topics

    run_id = time.strftime("%Y%m%d-%H%M%S")
    wanted = [t.strip() for t in args.targets.split(",")]
    formats = [f for f in ("kafka", "pulsar") if f in wanted]
    values = Values(w.value_bytes)
    meter = CpuMeter()
    pid = find_pulsar_pid()
    if pid is not None:
        meter.pids["pulsar"] = pid
    topics = _kop_topics(run_id, formats)
    with bench_namespaces(args.http_url, "profile", serving=False) as env:
        sections = _profiled(args, w, formats, topics, env, values, meter)
    text = f"## kop profile {run_id} ({w.records:,} records/phase)\n\n" + "\n".join(sections)
    (RESULTS / "profile-summary.md").write_text(text)
    sys.stderr.flush()
    print(text)
    print(f"wrote {(RESULTS / 'profile-summary.md').relative_to(REPO)}")
    return 0


def _profiled(
    args: argparse.Namespace, w: Workload, formats: list[str], topics: dict[str, dict[str, str]],
    env: dict[str, str], values: Values, meter: CpuMeter,
) -> list[str]:  # fmt: skip
    """Each format's produce and fetch paths, each under py-spy in a kop of its own (the
    same system namespace, so the fetching kop finds the producing one's indexes)."""
    from bench.run import RESULTS, _kop_ops, run_target

    out_dir = RESULTS / "profiles"
    sections: list[str] = []
    for fmt in formats:
        produced: int | None = None
        for phase, label in (("produce", "produce"), ("consume", "fetch")):
            path = out_dir / f"{label}-{fmt}.txt"
            log(f"profiling kop {label} path, {fmt} entries -> {path.relative_to(REPO)}")
            kop = KopProcess(RESULTS / "kop.log", pulsar_url=args.pulsar_url,
                             http_url=args.http_url, profile=path, profile_rate=RATE,
                             env=env)  # fmt: skip
            t0 = time.perf_counter()
            kop.start()
            try:
                meter.pids["kop"] = kop.pid
                if phase == "produce":
                    kafka_side.create_topics(kop.bootstrap, {t: fmt for t in topics[fmt].values()})
                results = run_target(_kop_ops(fmt, kop.bootstrap), topics[fmt], w, values, meter,
                                     phases=(phase,), produced=produced)  # fmt: skip
            finally:
                if phase == "consume" and not args.keep_topics:
                    for err in kafka_side.delete_topics(kop.bootstrap, list(topics[fmt].values())):
                        log(f"warning: could not delete {err}")
                kop.stop()
            wall = time.perf_counter() - t0
            r = next(r for r in results if r.phase == phase)
            if phase == "produce":
                produced = r.records - r.errors
            sections.append(
                f"### {label} path, `{fmt}` entries ({r.mb_s:.1f} MB/s under py-spy; "
                f"kop used {r.cpu.get('kop', 0):.2f} cores)\n\n"
                + summarise(path, wall_s=wall, rate=RATE)
            )
    return sections


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="summarise py-spy raw (collapsed) profiles")
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)
    for f in args.files:
        print(summarise(f, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
