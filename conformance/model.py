"""What a scenario is, what it observes, and how two observations compare.

An observation is plain JSON data (what a user of that client can see: offsets,
error names, record contents, assignments, tool output) with run-specific ids and
times already normalized away, so kop's and Kafka's can be compared with `==`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

Observation = Any  # JSON-able: dict / list / str / int / float / bool / None


@dataclass(frozen=True)
class Rec:
    """One record as a client sends or sees it."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int = -1
    offset: int = -1
    partition: int = 0

    def seen(self) -> dict[str, Any]:
        """The record as an observation (bytes shown as latin-1 text, which is exact)."""
        return {
            "partition": self.partition,
            "offset": self.offset,
            "key": _text(self.key),
            "value": _text(self.value),
            "headers": [[k, _text(v)] for k, v in self.headers],
            "timestamp": self.timestamp,
        }


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("latin-1")


class Target(Protocol):
    """A broker under test: kop or the reference Kafka."""

    name: str
    secure: Any  # conformance.targets.Secure, or None: no SASL_SSL listener

    @property
    def bootstrap(self) -> str: ...

    def force_compaction(self, topic: str, partitions: int = 1) -> None:
        """Make what compaction removed from `topic` visible (conformance/targets.py)."""


@dataclass
class Ctx:
    """One scenario run on one target by one client."""

    target: Target
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _topics: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return self.target.bootstrap

    def name(self, logical: str) -> str:
        """A topic or group name unique to this run (the observation uses `logical`)."""
        real = f"cf-{logical}-{self.run_id}"
        self._topics.append(real)
        return real

    @property
    def names(self) -> list[str]:
        return list(self._topics)

    def strip(self, text: str) -> str:
        """Text with this run's names turned back into their logical names."""
        return text.replace(f"-{self.run_id}", "").replace("cf-", "")


ScenarioFn = Callable[[Ctx, Any], Observation]


@dataclass(frozen=True)
class Scenario:
    name: str  # "area/what", e.g. "produce/codecs"
    fn: ScenarioFn
    clients: tuple[str, ...]  # which client drivers can run it
    quick: bool | tuple[str, ...]  # in the quick tier (make test): with every client, or these

    def quick_clients(self) -> tuple[str, ...]:
        if self.quick is True:
            return self.clients
        return self.quick or ()

    doc: str


CATALOGUE: dict[str, Scenario] = {}


def scenario(
    name: str, clients: tuple[str, ...], quick: bool | tuple[str, ...] = False
) -> Callable[[ScenarioFn], ScenarioFn]:
    def register(fn: ScenarioFn) -> ScenarioFn:
        if name in CATALOGUE:
            raise ValueError(f"scenario {name} defined twice")
        CATALOGUE[name] = Scenario(name, fn, clients, quick, (fn.__doc__ or "").strip())
        return fn

    return register


@dataclass(frozen=True)
class Outcome:
    """One target's result: an observation, or the exception the scenario raised."""

    observation: Observation = None
    error: str | None = None


def differences(kop: Observation, kafka: Observation, path: str = "") -> list[str]:
    """Where two observations differ, as readable paths (at most a few per level)."""
    if isinstance(kop, dict) and isinstance(kafka, dict):
        out: list[str] = []
        for k in sorted(set(kop) | set(kafka), key=str):
            if k not in kop or k not in kafka:
                out.append(f"{path}/{k}: only on {'kop' if k in kop else 'kafka'}")
            else:
                out += differences(kop[k], kafka[k], f"{path}/{k}")
        return out
    if isinstance(kop, list) and isinstance(kafka, list) and len(kop) == len(kafka):
        out = []
        for i, (a, b) in enumerate(zip(kop, kafka, strict=True)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    if kop == kafka:
        return []
    return [f"{path or '/'}: kop {_short(kop)} vs kafka {_short(kafka)}"]


def _short(value: Observation) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 160 else text[:157] + "..."
