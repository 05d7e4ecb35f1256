"""Run each (scenario, client) on kop and on Kafka, and judge the pair."""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from conformance.clients import DRIVERS
from conformance.clients.base import ClientError, Unsupported
from conformance.known import intermittent, known_reason
from conformance.model import Ctx, Observation, Outcome, Scenario, Target, differences
from conformance.setup import drop_topics

AGREE, DIFFER, KNOWN_DIFF, STALE, NA = "agree", "differ", "known", "stale", "n/a"


@dataclass
class Cell:
    scenario: str
    client: str
    status: str
    kop: Outcome
    kafka: Outcome
    diffs: list[str] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0


def _outcome(sc: Scenario, client: str, target: Target) -> Outcome:
    ctx = Ctx(target)
    try:
        return _observe(sc, client, ctx)
    finally:
        with contextlib.suppress(Exception):  # clean-up only: never the verdict
            drop_topics(ctx.bootstrap, ctx.names)


def _observe(sc: Scenario, client: str, ctx: Ctx) -> Outcome:
    try:
        return Outcome(observation=sc.fn(ctx, DRIVERS[client]))
    except Unsupported as exc:
        return Outcome(error=f"unsupported: {exc}")
    except ClientError as exc:
        return Outcome(observation={"client error": ctx.strip(exc.name)})
    except Exception as exc:  # the scenario itself broke: shown, and never "agree"
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(
            error=ctx.strip(f"{type(exc).__name__}: {exc} (at {where.name}:{where.lineno})")
        )


def judge(
    sc: Scenario, client: str, kop: Target, kafka: Target, instances: int = 1,
    together: bool = False,
) -> Cell:  # fmt: skip
    """One cell: the scenario by the client on Kafka and on kop (`together`: both at
    once, each in a thread of its own; the targets share nothing, and every name a
    scenario makes is its run's own)."""
    started = time.monotonic()
    if together:
        with ThreadPoolExecutor(1, thread_name_prefix="kafka-side") as pool:
            kafka_side = pool.submit(_outcome, sc, client, kafka)
            on_kop = _outcome(sc, client, kop)
            on_kafka = kafka_side.result()
    else:
        on_kafka = _outcome(sc, client, kafka)
        on_kop = _outcome(sc, client, kop)
    cell = Cell(sc.name, client, AGREE, on_kop, on_kafka, seconds=time.monotonic() - started)
    known = known_reason(sc.name, client, instances)
    if (on_kafka.error or "").startswith("unsupported"):
        cell.status = NA
        return cell
    if on_kop.error or on_kafka.error:
        cell.diffs = [
            f"{name}: {o.error}" for name, o in (("kop", on_kop), ("kafka", on_kafka)) if o.error
        ]
    else:
        cell.diffs = differences(on_kop.observation, on_kafka.observation)
    if cell.diffs:
        cell.status = KNOWN_DIFF if known else DIFFER
        cell.reason = known or ""
    elif known and not (instances > 1 and intermittent(sc.name, client)):
        cell.status, cell.reason = STALE, f"listed as a known difference but agrees: {known}"
    return cell


def run_all(
    scenarios: list[Scenario],
    clients: list[str],
    kop: Target,
    kafka: Target,
    progress: Callable[[Cell, int, int], None],
    quick: bool = False,
    instances: int = 1,
    together: bool = False,
) -> list[Cell]:
    pairs = [
        (sc, c)
        for sc in scenarios
        for c in (sc.quick_clients() if quick else sc.clients)
        if c in clients
    ]
    cells = []
    for i, (sc, client) in enumerate(pairs, 1):
        cell = judge(sc, client, kop, kafka, instances, together)
        cells.append(cell)
        progress(cell, i, len(pairs))
    return cells


def observation_of(cell: Cell, target: str) -> Observation:
    outcome = cell.kop if target == "kop" else cell.kafka
    return outcome.error if outcome.error else outcome.observation
