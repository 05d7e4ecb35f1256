"""python -m conformance [--quick] [--scenario PREFIX] [--client NAME] [--skip-client NAME]
                        [--no-write] [--instances N] [--registry]

Runs the catalogue against kop and the reference Kafka, prints the matrix and
writes it to docs/compatibility.md (with --instances 3, three kop instances judged
by a three-broker Kafka, to docs/compatibility-3-instances.md). Exits 1 when a cell
differs without a known reason (or a known difference went stale), so `make test`
can run the quick tier.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

import conformance.scenarios  # noqa: F401  (registers the catalogue)
from conformance import report
from conformance.clients import DRIVERS
from conformance.clients.go_clients import GoDriver
from conformance.model import CATALOGUE
from conformance.runner import DIFFER, STALE, Cell, observation_of, run_all
from conformance.targets import REPO, kafka_target, kop_target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="only the quick tier (run by make test)")
    ap.add_argument("--scenario", action="append", default=[], help="name prefix (repeatable)")
    ap.add_argument("--client", action="append", default=[], choices=sorted(DRIVERS))
    ap.add_argument("--skip-client", action="append", default=[], choices=sorted(DRIVERS),
                    help="leave this client out (repeatable)")  # fmt: skip
    ap.add_argument("--no-write", action="store_true", help="do not write docs/compatibility.md")
    ap.add_argument("--log-dir", type=Path, default=REPO / ".conformance")
    ap.add_argument("--show", action="store_true", help="print what each target observed")
    ap.add_argument(
        "--together", action="store_true",
        help="run each cell on Kafka and on kop at once (make test's quick tier: its time)",
    )  # fmt: skip
    ap.add_argument(
        "--instances",
        type=int,
        default=1,
        choices=range(1, 10),
        metavar="N",
        help="kop instances, judged by a Kafka of as many brokers (default 1)",
    )
    ap.add_argument(
        "--build-drivers", action="store_true",
        help="only build the Go clients' programs (a no-op when built; make test runs it "
        "beside the unit tier)",
    )  # fmt: skip
    ap.add_argument(
        "--registry", action="store_true",
        help="the Schema Registry tier: kop's registry against Apicurio Registry "
        "(docs/compatibility-registry.md)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.registry:
        from conformance.registry.main import main as registry_main

        return registry_main(args.log_dir, args.scenario, not args.no_write)
    if args.build_drivers:
        for driver in DRIVERS.values():
            if isinstance(driver, GoDriver):
                print(f"[conformance] {driver.name}: {driver.binary()}", flush=True)
        return 0

    chosen = [
        sc for sc in CATALOGUE.values()
        if (sc.quick_clients() or not args.quick)
        and (not args.scenario or any(sc.name.startswith(p) for p in args.scenario))
    ]  # fmt: skip
    clients = [c for c in args.client or list(DRIVERS) if c not in args.skip_client]
    started = time.monotonic()

    def progress(cell: Cell, i: int, n: int) -> None:
        elapsed = time.monotonic() - started
        print(f"[conformance] {i}/{n} {cell.scenario} [{cell.client}]: {cell.status} "
              f"({cell.seconds:.1f} s; {elapsed:.0f} s elapsed)", flush=True)  # fmt: skip
        if args.show:
            for target in ("kop", "kafka"):
                seen = json.dumps(observation_of(cell, target), default=str)
                print(f"    {target}: {seen[:2000]}", flush=True)

    # SIGTERM unwinds as Ctrl-C does: the kop instances and any broker started here stop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    n = args.instances
    with kafka_target(n) as kafka, kop_target(args.log_dir, n) as kop:
        cells = run_all(
            chosen, clients, kop, kafka, progress, quick=args.quick, instances=n,
            together=args.together,
        )  # fmt: skip
    print(report.text(cells))
    tier = "quick tier" if args.quick else "full matrix"
    seconds = time.monotonic() - started
    print(f"[conformance] {tier}, {report.setting(n)}: {len(cells)} cells in {seconds:.0f} s")
    whole = not (args.quick or args.scenario or args.client or args.skip_client)
    if not args.no_write and whole:
        note = f"Last run: the {tier}, {len(cells)} cells, in {seconds / 60:.0f} min."
        raw = args.log_dir / ("last.json" if n == 1 else f"last-{n}-instances.json")
        report.write(cells, note, n, raw)
    return 1 if any(c.status in (DIFFER, STALE) for c in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
