"""The per-group configs every instance applies: kept in Pulsar (a record per group with
overrides, in the group's namespace), read for a namespace when one of its groups needs
them and again once `refresh_s` old, so an override set at one instance holds at every
other within that bound; a change made here applies here at once.

The coordinators ask `settings(key)` without waiting (their rules are pure); the
handlers that reach them first await `fresh(key)`, which reads the namespace again when
its copy is stale. Pulsar away, the last copy (or the broker-wide defaults) stands: a
heartbeat never fails for want of a group's configs."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable

from kop.groups.group_configs import GroupSettings, checked
from kop.groups.scope import GroupScope
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.group_configs import GroupConfigStore
from kop.storage.naming import Namespace
from kop.topics.configs import incremental

log = logging.getLogger(__name__)

MAX_GROUPS_PER_NAMESPACE = 200  # each is a property of the namespace in Pulsar's metadata
MAX_NAMESPACES = 10_000  # copies kept; the oldest is dropped past that

Overrides = dict[str, dict[str, str]]  # group id -> its overrides


class GroupConfigBook:
    def __init__(
        self,
        store: GroupConfigStore,
        defaults: GroupSettings,
        scope: GroupScope,
        refresh_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self.defaults = defaults
        self._scope = scope
        self._refresh_s = refresh_s
        self._clock = clock
        self._copies: dict[Namespace, tuple[float, Overrides]] = {}
        self._reading: dict[Namespace, asyncio.Task[Overrides]] = {}

    def settings(self, key: str) -> GroupSettings:
        """The group's settings as last read (the defaults when never read)."""
        ns, group = self._scope.split(key)
        copy = self._copies.get(ns)
        overrides = copy[1].get(group) if copy is not None else None
        return self.defaults.overridden(overrides) if overrides else self.defaults

    async def fresh(self, key: str) -> GroupSettings:
        """The group's settings, its namespace read again if its copy is stale."""
        ns, _ = self._scope.split(key)
        try:
            await self._namespace(ns)
        except Exception as exc:  # Pulsar away: what was known stands, for another bound
            log.warning("group configs of %s not read: %s", ns.path, exc)
            copy = self._copies.get(ns)
            if copy is not None:  # not asked again at every heartbeat meanwhile
                self._copies[ns] = (self._clock(), copy[1])
        return self.settings(key)

    async def overrides(self, ns: Namespace, group: str) -> dict[str, str]:
        """What DescribeConfigs reports as the group's own (read now if stale)."""
        return dict((await self._namespace(ns)).get(group, {}))

    async def alter(
        self, ns: Namespace, group: str, ops: Iterable[tuple[str, int, str | None]], dry: bool
    ) -> None:
        """IncrementalAlterConfigs on one group, applied whole or refused: SET and DELETE
        (APPEND and SUBTRACT fit no group config)."""
        current = await self._namespace(ns, force=True)
        after = checked(incremental(current.get(group, {}), {}, ops))
        if group not in current and after and len(current) >= MAX_GROUPS_PER_NAMESPACE:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"kop keeps configs for at most {MAX_GROUPS_PER_NAMESPACE} groups of a "
                "namespace; delete another group's first",
            )
        if dry:
            return
        if after:
            await self._store.save(ns, group, json.dumps(after, sort_keys=True))
        else:
            await self._store.delete(ns, group)
        copy = self._copies.get(ns)
        if copy is not None:
            groups = dict(copy[1])
            if after:
                groups[group] = after
            else:
                groups.pop(group, None)
            self._copies[ns] = (copy[0], groups)

    async def _namespace(self, ns: Namespace, force: bool = False) -> Overrides:
        copy = self._copies.get(ns)
        if copy is not None and not force and self._clock() - copy[0] < self._refresh_s:
            return copy[1]
        reading = self._reading.get(ns)
        if reading is None:  # one read at a time per namespace, whoever asks
            reading = self._reading[ns] = asyncio.ensure_future(self._read(ns))
            reading.add_done_callback(lambda _: self._reading.pop(ns, None))
        return await asyncio.shield(reading)

    async def _read(self, ns: Namespace) -> Overrides:
        started = self._clock()
        groups: Overrides = {}
        for group, record in (await self._store.load(ns)).items():
            try:
                values = json.loads(record)
                if not isinstance(values, dict):
                    raise ValueError("not an object")
                groups[group] = checked({str(k): str(v) for k, v in values.items()})
            except (ValueError, KafkaError) as exc:
                log.warning("group %s of %s: its configs are ignored: %s", group, ns.path, exc)
        self._copies.pop(ns, None)
        while len(self._copies) >= MAX_NAMESPACES:
            del self._copies[next(iter(self._copies))]
        self._copies[ns] = (started, groups)
        return groups


class LocalGroupConfigs:
    """Records in this process only: for a kop without storage of its own (tests), as
    kop.api.context.CountingIds is for producer ids."""

    def __init__(self) -> None:
        self.records: dict[tuple[Namespace, str], str] = {}

    async def load(self, ns: Namespace) -> dict[str, str]:
        return {group: r for (n, group), r in self.records.items() if n == ns}

    async def save(self, ns: Namespace, group: str, record: str) -> None:
        self.records[(ns, group)] = record

    async def delete(self, ns: Namespace, group: str) -> None:
        self.records.pop((ns, group), None)
