"""`python -m conformance --registry`: both registries started, every scenario run, the
table printed and written to docs/compatibility-registry.md; exit 1 on a difference
without a known reason, or a known one that no longer shows up."""

from __future__ import annotations

from pathlib import Path

from conformance.registry import report, runner
from conformance.registry.apicurio import apicurio
from conformance.registry.targets import kop_registry
from conformance.targets import REPO, _free_port

DOC = REPO / "docs" / "compatibility-registry.md"


def main(log_dir: Path, only: list[str], write: bool) -> int:
    log_dir.mkdir(parents=True, exist_ok=True)
    with (
        kop_registry(log_dir) as kop,
        apicurio(_free_port(), _free_port(), log_dir / "apicurio.log") as reference,
    ):
        cells = runner.run(kop, reference, only)
    text = report.markdown(cells)
    print(text)
    if write and not only:
        DOC.write_text(text)
    agree = sum(c.verdict in ("agree", "known") for c in cells)
    print(f"{agree} of {len(cells)} scenarios agree with Apicurio (or differ for a known reason)")
    return 1 if any(c.verdict in ("DIFFER", "STALE") for c in cells) else 0
