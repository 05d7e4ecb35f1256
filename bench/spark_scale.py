"""The PySpark jobs at scale: `kop-spark generate` then `validate-offsets` (and, with
--replay, `replay-check`) over N events, against a fresh kop on the running Pulsar.

Each stage's records/s comes from the job's own JSON report; peak memory is the
largest resident set of the job's whole process tree (Spark's JVM and its Python
workers) and of kop, sampled from /proc every second. `--write` puts the table
in docs/benchmarks.md.

    python -m bench.spark_scale --events 10000000 --format kafka --write
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import log, pulsar_healthy, write_doc_section
from bench.kop_process import KopProcess

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"


def markers(fmt: str) -> tuple[str, str]:
    return f"<!-- spark-{fmt}:begin -->", f"<!-- spark-{fmt}:end -->"


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            todo += [int(x) for x in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
    return out


def _rss_mib(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class PeakRss:
    """The largest resident set a process tree reached, sampled every second."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.peak = max(self.peak, _rss_mib(_tree(self.pid)))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return round(self.peak, 1)


def job(name: str, args: list[str], report_dir: Path, kop: KopProcess) -> dict[str, Any]:
    cmd = [str(Path(sys.executable).parent / "kop-spark"), name, *args]
    log(f"$ kop-spark {name} {' '.join(args)}")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO)
    job_peak, kop_peak = PeakRss(proc.pid), PeakRss(kop.pid)
    code = proc.wait()
    seconds = time.monotonic() - t0
    found = json.loads((report_dir / f"{name}.json").read_text())
    return {
        "exit": code,
        "seconds": round(seconds, 1),
        "job_peak_mib": job_peak.stop(),
        "kop_peak_mib": kop_peak.stop(),
        "report": found,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    report_dir = REPO / "bench" / "results" / f"spark-{time.strftime('%Y%m%d-%H%M%S')}"
    topic = f"spark-scale-{args.format}-{int(time.time())}"
    kop_args = ["--default-entry-format", args.format]
    with KopProcess(
        report_dir / "kop.log", pulsar_url=args.pulsar_url, http_url=args.http_url,
        extra_args=kop_args,
    ) as kop:  # fmt: skip
        common = ["--topic", topic, "--bootstrap", kop.bootstrap, "--report-dir", str(report_dir)]
        steps = {
            "generate": job(
                "generate",
                [
                    *common,
                    "--events",
                    str(args.events),
                    "--partitions",
                    str(args.partitions),
                    "--entry-format",
                    args.format,
                ],
                report_dir,
                kop,
            ),
            "validate-offsets": job("validate-offsets", common, report_dir, kop),
        }
        if args.replay:
            steps["replay-check"] = job("replay-check", common, report_dir, kop)
    return {
        "events": args.events,
        "partitions": args.partitions,
        "format": args.format,
        "machine": report.machine(),
        "steps": steps,
        "report_dir": str(report_dir.relative_to(REPO)),
    }


def markdown(doc: dict[str, Any]) -> str:
    begin, end = markers(doc["format"])
    rows = []
    for name, step in doc["steps"].items():
        for phase, t in step["report"]["timings"].items():
            rate = f"{t['records_per_s']:,.0f}" if "records_per_s" in t else ""
            rows.append(f"| {name} | {phase} | {t['seconds']:.1f} | {rate} | | |")
        rows.append(
            f"| **{name}** | **whole job, exit {step['exit']}** | **{step['seconds']:.1f}** | "
            f"| {step['job_peak_mib']:,.0f} | {step['kop_peak_mib']:,.0f} |"
        )
    total = sum(s["seconds"] for k, s in doc["steps"].items() if k != "replay-check")
    m = doc["machine"]
    return "\n".join(
        [
            begin,
            f"`python -m bench.spark_scale --events {doc['events']} --format {doc['format']}`: "
            f"{doc['events']:,} events over {doc['partitions']} partitions, `{doc['format']}` "
            f"entry format, on {m.get('nproc')} cores with Pulsar, kop and Spark `local[*]` "
            f"sharing them. generate + validate-offsets: **{total / 60:.1f} min**. "
            f"Summary: `bench/results/spark-{doc['format']}.json`.",
            "",
            "| job | phase | seconds | records/s | job peak RSS MiB | kop peak RSS MiB |",
            "|---|---|---:|---:|---:|---:|",
            *rows,
            end,
        ]
    )


def write_doc(section: str, fmt: str) -> None:
    write_doc_section(DOC, section, *markers(fmt), "## The PySpark jobs at scale")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.spark_scale", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--format", choices=("pulsar", "kafka"), default="pulsar")
    ap.add_argument("--replay", action="store_true", help="run replay-check too")
    ap.add_argument("--pulsar-url", default="pulsar://127.0.0.1:6650")
    ap.add_argument("--http-url", default="http://127.0.0.1:8080")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if not pulsar_healthy(args.http_url):
        log(f"Pulsar is not healthy at {args.http_url}; start it: python3 tools/pulsar.py start")
        return 2
    doc = run(args)
    out = REPO / "bench" / "results" / f"spark-{args.format}.json"  # the run dir is not kept
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    section = markdown(doc)
    print(section)
    if args.write:
        write_doc(section, args.format)
    return 0 if all(s["exit"] == 0 for s in doc["steps"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
