"""JSON values as the check compares them: canonical texts (what a schema means, its
annotations left out), kinds, listed values, and the wording of messages."""

from __future__ import annotations

import json
from typing import TypeGuard

from kop.registry.json_compat.keywords import (
    KINDS,
    MAX_MESSAGE,
    MEANINGFUL,
    MISSING,
    ONE_SCHEMA,
    REFERENCES,
    SCHEMA_LIST,
    SCHEMA_MAP,
    VALIDATION,
    Schema,
)


def dump(value: object) -> str | None:
    """The canonical text of a JSON value: equal texts, equal values. Unlike ==, it
    tells true from 1 and 1 from 1.0 (refusing on 1 vs 1.0 is merely conservative)."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (RecursionError, TypeError, ValueError):
        return None


def strictly_equal(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        if a != b:
            return False
    except RecursionError:
        return False
    text = dump(a)
    return text is not None and text == dump(b)


class Texts:
    """The canonical text of what a schema means (its annotations left out) and the
    $refs in it, computed once per object (kept with its text: its id is not reused)."""

    def __init__(self) -> None:
        self._essences: dict[int, tuple[object, object]] = {}
        self._keys: dict[tuple[int, str], tuple[object, str | None, tuple[str, ...] | None]] = {}

    def key(self, value: object, keyword: str = "") -> tuple[str | None, tuple[str, ...] | None]:
        """The text and the $refs of `value`: a schema, or else the value of `keyword`.
        The refs are None when it holds a $ref that is not a string, or a reference kop
        does not follow ($recursiveRef, $dynamicRef)."""
        if not isinstance(value, dict | list):
            return dump(value), ()
        hit = self._keys.get((id(value), keyword))
        if hit is None:
            try:
                essence = self._keyword(keyword, value) if keyword else self._essence(value)
            except RecursionError:
                hit = (value, None, None)
            else:
                text = dump(essence)
                marked = text is not None and any(f'"{k}"' in text for k in REFERENCES)
                hit = (value, text, _refs_in(essence) if marked else ())
            self._keys[(id(value), keyword)] = hit
        return hit[1], hit[2]

    def _essence(self, schema: object) -> object:
        if not isinstance(schema, dict):
            return schema
        hit = self._essences.get(id(schema))
        if hit is None:
            kept = {k: self._keyword(k, v) for k, v in schema.items() if k in MEANINGFUL}
            hit = self._essences[id(schema)] = (schema, kept)
        return hit[1]

    def _keyword(self, keyword: str, value: object) -> object:
        if keyword in SCHEMA_LIST and isinstance(value, list):
            return [self._essence(v) for v in value]
        if keyword in SCHEMA_MAP and isinstance(value, dict):
            return {name: self._essence(v) for name, v in value.items()}
        return self._essence(value) if keyword in ONE_SCHEMA else value


def _refs_in(value: object) -> tuple[str, ...] | None:
    found: dict[str, None] = {}
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if "$recursiveRef" in node or "$dynamicRef" in node:
                return None
            ref = node.get("$ref", MISSING)
            if ref is not MISSING:
                if not isinstance(ref, str):
                    return None
                found[ref] = None
            stack.extend(node.values())
    return tuple(found)


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def type_names(value: object) -> frozenset[str] | None:
    """The types a `type` keyword names; None if it is malformed (or names "any")."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n in KINDS for n in names):
        return None
    return frozenset(str(n) for n in names)


def meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """The kinds of values both sets allow ("integer" is in "number")."""
    both = set(a & b)
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        both.add("integer")
    return frozenset(both)


def listed_values(schema: Schema) -> list[object] | None:
    """The values `schema` lists (const, enum, or both), if it lists them."""
    enum = schema.get("enum")
    if "const" not in schema:
        return list(enum) if isinstance(enum, list) else None
    const = schema["const"]
    if isinstance(enum, list) and dump(const) not in texts_of(enum):
        return []
    return [const]


def kinds_of(schema: Schema) -> frozenset[str]:
    """The kinds of values `schema` may accept (more than it does, never fewer)."""
    names = type_names(schema.get("type", list(KINDS)))
    kinds = KINDS if names is None else names
    listed = listed_values(schema)
    if listed is not None:
        kinds = meet(kinds, frozenset(_kind_of(v) for v in listed))
    return kinds


def finite(schema: Schema, kinds: frozenset[str]) -> list[object] | None:
    """Every value `schema` may accept, when they are few (None: they are not)."""
    listed = listed_values(schema)
    if listed is None:
        if not kinds <= {"null", "boolean"}:
            return None
        listed = ([None] if "null" in kinds else []) + ([True, False] if "boolean" in kinds else [])
    return [v for v in listed if meet(kinds, frozenset({_kind_of(v)}))]


def accepts_nothing(schema: Schema) -> bool:
    kinds = kinds_of(schema)
    return not kinds or finite(schema, kinds) == []


def trivial(schema: Schema) -> bool:
    """True when `schema` holds no validation keyword: it accepts anything."""
    return not any(key in VALIDATION for key in schema)


def texts_of(values: list[object]) -> set[str | None]:
    return {dump(v) for v in values}


def segment(name: str) -> str:
    """A property name as a JSON pointer token (RFC 6901), shortened if long."""
    token = str(name).replace("~", "~0").replace("/", "~1")
    return token if len(token) <= 100 else token[:100] + "…"


def show(value: object) -> str:
    text = dump(value) or "?"
    return text if len(text) <= 80 else text[:80] + "…"


def names(kinds: frozenset[str]) -> str:
    ordered = sorted(kinds)
    return ordered[0] if len(ordered) == 1 else json.dumps(ordered, separators=(",", ":"))


def one_line(text: str | None) -> str | None:
    """`text` on one line, its middle left out if it is long (the end says why)."""
    if text is None:
        return None
    line = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    if len(line) <= MAX_MESSAGE:
        return line
    return line[: MAX_MESSAGE // 4] + "…" + line[-MAX_MESSAGE // 2 :]


def unchecked(path: str, key: str) -> str:
    return f"{path}: kop does not check changes of {key}"


def rebase(stored: tuple[str, str], path: str) -> str:
    """A reason found at another path for the same pair, moved to `path`."""
    old, reason = stored
    if reason.startswith((old + "/", old + ":")):
        return path + reason[len(old) :]
    return reason
