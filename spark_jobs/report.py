"""Each job's report: JSON for machines, a PNG for people, both under --report-dir."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_jobs.progress import say


def write_report(
    report_dir: Path, job: str, report: dict[str, Any], draw: Callable[[Any], None]
) -> tuple[Path, Path]:
    """Writes <job>.json and <job>.png; `draw(figure)` fills the chart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    report_dir.mkdir(parents=True, exist_ok=True)
    json_path = report_dir / f"{job}.json"
    json_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    fig = plt.figure(figsize=(11, 4.5))
    draw(fig)
    fig.tight_layout()
    png_path = report_dir / f"{job}.png"
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    say(f"report: {json_path} and {png_path}")
    return json_path, png_path


def draw_counts_and_rates(
    fig: Any, title: str, counts: dict[str, dict[int, int]], timings: dict[str, dict[str, float]]
) -> None:
    """Left: records per partition for each view; right: records/s of each phase."""
    left = fig.add_subplot(1, 2, 1)
    partitions = sorted({p for series in counts.values() for p in series})
    width = 0.8 / max(1, len(counts))
    for i, (label, series) in enumerate(counts.items()):
        xs = [p + i * width for p in partitions]
        left.bar(xs, [series.get(p, 0) for p in partitions], width=width, label=label)
    left.set_xticks([p + width * (len(counts) - 1) / 2 for p in partitions], map(str, partitions))
    left.set_xlabel("partition")
    left.set_ylabel("records")
    left.set_title(f"{title}: records per partition")
    left.legend(loc="lower right")
    right = fig.add_subplot(1, 2, 2)
    rated = {k: v["records_per_s"] for k, v in timings.items() if "records_per_s" in v}
    right.barh(list(rated), list(rated.values()), color="tab:green")
    right.set_xlabel("records/s")
    right.set_title("throughput by phase")
