"""The Kafka error codes a response carries, with how often: what Kafka's
`RequestMetrics` counts as `ErrorsPerSec` by request and error. An answer holds them at
the top and per topic, partition, group or resource; a response with one failed
partition of a thousand is one error, not a failed request.

Walked for every answer, so written for speed: containers are told apart by their
exact type, and nothing is allocated for an answer without an error."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

_CONTAINERS = (dict, list, tuple)
_LEAVES = frozenset({bytes, bytearray, memoryview, str, int, float, bool, type(None)})
_NONE: Mapping[int, int] = {}


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _fields(kind: type) -> tuple[str, ...] | None:
    """A message class's field names, once per class (None: not a message)."""
    try:
        return _FIELDS[kind]
    except KeyError:
        names = (
            tuple(f.name for f in dataclasses.fields(kind))
            if dataclasses.is_dataclass(kind)
            else None
        )
        _FIELDS[kind] = names
        return names


def error_counts(body: object) -> Mapping[int, int]:
    """Each non-zero `error_code` in `body` (a handler's dict, or a message object),
    however deep, with how often it occurs."""
    found: dict[int, int] | None = None
    stack = [body]
    children: Iterable[object]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            assert isinstance(item, dict)
            code = item.get("error_code")
            children = item.values()
        elif kind is list or kind is tuple:
            assert isinstance(item, list | tuple)
            code, children = None, item
        elif kind in _LEAVES:
            continue
        else:
            names = _fields(kind)
            if names is None:
                continue
            code = getattr(item, "error_code", None)
            children = [getattr(item, name) for name in names]
        if code:
            found = found if found is not None else {}
            found[int(code)] = found.get(int(code), 0) + 1
        for child in children:
            if type(child) not in _LEAVES:
                stack.append(child)
    return found if found is not None else _NONE
