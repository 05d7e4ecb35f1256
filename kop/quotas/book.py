"""The quotas every instance enforces: kept in Pulsar (one record per entity, the
store's), read at start and every `refresh_s`, so a quota set at one instance holds
at every other within that bound; a change made here applies here at once.

Describe and alter follow DescribeClientQuotas and AlterClientQuotas: filters by
entity type (exact name, the default, or any named), strict or not; each entry of an
alteration is checked whole and fails alone."""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from kop.quotas.entities import Entity, QuotaInvalid, check_value, entity
from kop.quotas.throttles import Throttles
from kop.storage.quotas import QuotaStore
from kop.storage.refreshing import refresh_every

log = logging.getLogger(__name__)

MAX_ENTITIES = 1000  # each is a property of the system namespace in Pulsar's metadata

EXACT, DEFAULT, ANY = 0, 1, 2  # DescribeClientQuotas match types


@dataclass(frozen=True, slots=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None


@dataclass(frozen=True, slots=True)
class Op:
    key: str
    value: float
    remove: bool


class QuotaBook:
    def __init__(self, store: QuotaStore, throttles: Throttles, refresh_s: float = 5.0) -> None:
        self._store = store
        self._refresh_s = refresh_s
        self.throttles = throttles
        self._quotas: dict[Entity, dict[str, float]] = {}

    async def refresh(self) -> None:
        quotas: dict[Entity, dict[str, float]] = {}
        for name, record in (await self._store.load()).items():
            parsed = _decode(name, record)
            if parsed is not None:
                quotas[parsed[0]] = parsed[1]
        self._set(quotas)

    async def run(self) -> None:
        await refresh_every(self.refresh, self._refresh_s, "client quotas")

    def describe(
        self, components: Iterable[Component], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        wanted = list(components)
        types = [c.entity_type for c in wanted]
        if len(set(types)) != len(types):
            raise QuotaInvalid("a filter names each entity type at most once")
        if any(c.match_type not in (EXACT, DEFAULT, ANY) for c in wanted):
            raise QuotaInvalid("match types are 0 (exact), 1 (default) and 2 (any named)")
        return [
            (e, dict(values)) for e, values in sorted(self._quotas.items(), key=_order)
            if _matches(e, wanted, strict)
        ]  # fmt: skip

    async def alter(self, pairs: list[tuple[str, str | None]], ops: list[Op], dry: bool) -> None:
        """One entry of AlterClientQuotas: applied whole, or QuotaInvalid."""
        target = entity(pairs)
        keys = [op.key for op in ops]
        if len(set(keys)) != len(keys):
            raise QuotaInvalid("an entry alters each key at most once")
        values = dict(self._quotas.get(target, {}))
        for op in ops:
            if op.remove:
                check_value(op.key, 1.0)  # a known key, whatever the value
                values.pop(op.key, None)
            else:
                values[op.key] = check_value(op.key, op.value)
        if target not in self._quotas and values and len(self._quotas) >= MAX_ENTITIES:
            raise QuotaInvalid(f"kop keeps at most {MAX_ENTITIES} quota entities")
        if dry:
            return
        name = _encode(target)
        if values:
            await self._store.save(name, json.dumps(values, sort_keys=True))
        else:
            await self._store.delete(name)
        quotas = dict(self._quotas)
        if values:
            quotas[target] = values
        else:
            quotas.pop(target, None)
        self._set(quotas)

    def _set(self, quotas: dict[Entity, dict[str, float]]) -> None:
        self._quotas = quotas
        self.throttles.quotas = quotas


def _matches(e: Entity, wanted: list[Component], strict: bool) -> bool:
    names = dict(e)
    if strict and set(names) != {c.entity_type for c in wanted}:
        return False
    for c in wanted:
        if c.entity_type not in names:
            return False
        name = names[c.entity_type]
        if c.match_type == EXACT and name != c.match:
            return False
        if (c.match_type == DEFAULT) != (name is None):
            return False
    return True


def _order(item: tuple[Entity, dict[str, float]]) -> list[tuple[str, str]]:
    return [(t, "" if n is None else n) for t, n in item[0]]


def _encode(e: Entity) -> str:
    """`user=alice,client-id=<default>` with names percent-encoded: one store key."""
    return ",".join(f"{t}={'<default>' if n is None else urllib.parse.quote(n, safe='')}"
                    for t, n in e)  # fmt: skip


def _decode(name: str, record: str) -> tuple[Entity, dict[str, float]] | None:
    try:
        pairs: list[tuple[str, str | None]] = []
        for part in name.split(","):
            t, _, n = part.partition("=")
            pairs.append((t, None if n == "<default>" else urllib.parse.unquote(n)))
        values = {str(k): check_value(str(k), float(v)) for k, v in json.loads(record).items()}
        return entity(pairs), values
    except (ValueError, AttributeError) as exc:  # QuotaInvalid is a ValueError
        log.warning("quota record %r ignored: %s", name, exc)
        return None
