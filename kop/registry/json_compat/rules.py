"""The keyword rules: does the writer's flat schema satisfy the reader's, keyword by
keyword (types, values, bounds, strings, arrays, objects)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kop.registry.json_compat.keywords import (
    CONTEXTUAL,
    EMPTY,
    LOOSENING,
    MISSING,
    UNMODELLED,
    Schema,
)
from kop.registry.json_compat.values import (
    dump,
    finite,
    is_number,
    listed_values,
    names,
    segment,
    show,
    texts_of,
    type_names,
    unchecked,
)

if TYPE_CHECKING:
    from kop.registry.json_compat.comparison import Comparison


class Scope:
    """What a keyword rule needs of the comparison: sameness of values, and a descent
    into the data (a property, an item)."""

    def __init__(self, comparison: Comparison, depth: int, level: int) -> None:
        self.comparison = comparison
        self.depth = depth
        self.level = level
        self.draft4 = comparison.reader.draft4

    def same(self, a: object, b: object, keyword: str) -> bool:
        return self.comparison.same(a, b, keyword)

    def sub(self, reader: object, writer: object, path: str) -> str | None:
        """Why `reader` cannot read `writer` (a property, an item) so far: a pair put
        off is compared by the end, and fails the whole comparison if it must."""
        return self.comparison.read(reader, writer, path, self.depth + 1, self.level + 1, True)

    def holds(self, reader: object, writer: object, path: str) -> bool:
        """True if `reader` reads `writer` (a property, an item): decided now."""
        c, depth, level = self.comparison, self.depth + 1, self.level + 1
        return c.attempt(reader, writer, path, depth, level, whole=True) is None


_Rule = Callable[[Scope, Schema, Schema, frozenset[str], str], str | None]


def _equal_or_refuse(
    scope: Scope, r: Schema, w: Schema, keys: tuple[str, ...], path: str
) -> str | None:
    for key in keys:
        mine, theirs = r.get(key, MISSING), w.get(key, MISSING)
        if mine is MISSING and theirs is MISSING:
            continue
        if mine is MISSING or theirs is MISSING or not scope.same(mine, theirs, key):
            return unchecked(path, key)
    return None


def _unmodelled_rule(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    for key in r:
        if key in UNMODELLED and (reason := _equal_or_refuse(scope, r, w, (key,), path)):
            return reason
    for key in w:
        if key in LOOSENING and key not in r:
            return unchecked(path, key)
    return None


def _type_rule(scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str) -> str | None:
    if "type" not in r:
        return None
    allowed = type_names(r["type"])
    if allowed is None:
        return _equal_or_refuse(scope, r, w, ("type",), path)
    if not allowed:
        return f"{path}: the reader's schema accepts nothing"
    if all(k in allowed or (k == "integer" and "number" in allowed) for k in kinds):
        return None
    if "type" not in w and listed_values(w) is None:
        return f"{path}: type {names(allowed)} added"
    return f"{path}: type {names(kinds)} narrowed to {names(allowed)}"


def _values_rule(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    for key in ("const", "enum"):
        if key not in r:
            continue
        allowed = [r[key]] if key == "const" else r[key]
        if not isinstance(allowed, list):
            return _equal_or_refuse(scope, r, w, (key,), path)
        values = finite(w, kinds)
        if values is None:
            return f"{path}: {key} added"
        texts = texts_of(allowed) - {None}
        for value in values:
            if dump(value) not in texts:
                return f"{path}: {key} narrowed: the writer allows {show(value)}"
    return None


def _bounds(s: Schema, keys: tuple[str, str], draft4: bool) -> list[tuple[float, bool, str]] | None:
    """The bounds `s` sets by `keys` (inclusive, exclusive): (value, exclusive, keyword);
    None if they are malformed for the draft (draft-04: exclusive* is a boolean)."""
    inclusive, exclusive = keys
    low, strict = s.get(inclusive, MISSING), s.get(exclusive, MISSING)
    if low is not MISSING and not is_number(low):
        return None
    out: list[tuple[float, bool, str]] = []
    if draft4:
        if strict is not MISSING and not isinstance(strict, bool):
            return None
        if isinstance(low, int | float):
            out.append((low, strict is True, "exclusive " * (strict is True) + inclusive))
        return out
    if strict is not MISSING and not is_number(strict):
        return None
    if isinstance(low, int | float):
        out.append((low, False, inclusive))
    if isinstance(strict, int | float):
        out.append((strict, True, exclusive))
    return out


def _bound_rule(scope: Scope, r: Schema, w: Schema, keys: tuple[str, str], path: str) -> str | None:
    lower = keys[0] == "minimum"
    mine, theirs = _bounds(r, keys, scope.draft4), _bounds(w, keys, scope.draft4)
    if mine is None or theirs is None:
        return _equal_or_refuse(scope, r, w, keys, path)
    for value, exclusive, key in mine:
        for bound, strict, _ in theirs:
            inside = bound > value if lower else bound < value
            if inside or (bound == value and (strict or not exclusive)):
                break
        else:
            if not theirs:
                return f"{path}: {key} {show(value)} added"
            bound, _, name = theirs[0]
            return f"{path}: {key} {show(value)} narrows the writer's {name} {show(bound)}"
    return None


def _multiple_rule(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if "multipleOf" not in r:
        return None
    mine, theirs = r["multipleOf"], w.get("multipleOf", MISSING)
    if not is_number(mine) or (theirs is not MISSING and not is_number(theirs)):
        return _equal_or_refuse(scope, r, w, ("multipleOf",), path)
    if theirs is not MISSING and dump(mine) == dump(theirs):
        return None
    # exact in floats too (validators divide a float instance by the float of them)
    small = isinstance(mine, int) and isinstance(theirs, int) and 0 < mine <= theirs < 2**53
    if small and isinstance(mine, int) and isinstance(theirs, int) and theirs % mine == 0:
        return None
    if mine == 1 and isinstance(mine, int) and kinds & {"number", "integer"} == {"integer"}:
        return None  # every integer is a multiple of 1
    if theirs is MISSING:
        return f"{path}: multipleOf {show(mine)} added"
    return f"{path}: multipleOf changed from {show(theirs)} to {show(mine)}"


def _number_rules(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if not kinds & {"number", "integer"}:
        return None
    return (
        _bound_rule(scope, r, w, ("minimum", "exclusiveMinimum"), path)
        or _bound_rule(scope, r, w, ("maximum", "exclusiveMaximum"), path)
        or _multiple_rule(scope, r, w, kinds, path)
    )


def _size_rule(scope: Scope, r: Schema, w: Schema, key: str, path: str) -> str | None:
    """minLength, maxItems...: a minimum may only fall, a maximum only rise."""
    if key not in r:
        return None
    lower = key.startswith("min")
    mine, theirs = r[key], w.get(key, MISSING)
    if not is_number(mine) or (theirs is not MISSING and not is_number(theirs)):
        return _equal_or_refuse(scope, r, w, (key,), path)
    if not is_number(theirs):  # absent
        return None if lower and mine <= 0 else f"{path}: {key} {show(mine)} added"
    if theirs >= mine if lower else theirs <= mine:
        return None
    return f"{path}: {key} changed from {show(theirs)} to {show(mine)}"


def _same_string_rule(scope: Scope, r: Schema, w: Schema, key: str, path: str) -> str | None:
    """pattern, format: the reader may drop one, not add or change it."""
    if key not in r:
        return None
    if not isinstance(r[key], str):
        return _equal_or_refuse(scope, r, w, (key,), path)
    if key not in w:
        return f"{path}: {key} {show(r[key])} added"
    if r[key] != w[key]:
        return f"{path}: {key} changed from {show(w[key])} to {show(r[key])}"
    return None


def _string_rules(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if "string" not in kinds:
        return None
    return (
        _size_rule(scope, r, w, "minLength", path)
        or _size_rule(scope, r, w, "maxLength", path)
        or _same_string_rule(scope, r, w, "pattern", path)
    )


def _format_rule(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    return _same_string_rule(scope, r, w, "format", path)


def _items_rule(scope: Scope, r: Schema, w: Schema, path: str) -> str | None:
    if "items" not in r:
        return None
    mine, theirs = r["items"], w.get("items", EMPTY)
    if not isinstance(mine, dict | bool) or not isinstance(theirs, dict | bool):
        return _equal_or_refuse(scope, r, w, ("items",), path)  # the tuple form
    return scope.sub(mine, theirs, f"{path}/items")


def _array_rules(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if "array" not in kinds:
        return None
    unique = r.get("uniqueItems", False)
    if not isinstance(unique, bool):
        return _equal_or_refuse(scope, r, w, ("uniqueItems",), path)
    if unique and w.get("uniqueItems") is not True:
        return f"{path}: uniqueItems added"
    return (
        _size_rule(scope, r, w, "minItems", path)
        or _size_rule(scope, r, w, "maxItems", path)
        or _items_rule(scope, r, w, path)
    )


def _object_rules(
    scope: Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if "object" not in kinds:
        return None
    return (
        _properties_rule(scope, r, w, path)
        or _required_rule(scope, r, w, path)
        or _size_rule(scope, r, w, "minProperties", path)
        or _size_rule(scope, r, w, "maxProperties", path)
    )


def _object_parts(s: Schema) -> tuple[Schema, object] | None:
    """`properties` and `additionalProperties` (None if malformed)."""
    props, more = s.get("properties", EMPTY), s.get("additionalProperties", True)
    if isinstance(props, dict) and isinstance(more, dict | bool):
        return props, more
    return None


def _properties_rule(scope: Scope, r: Schema, w: Schema, path: str) -> str | None:
    """Each property is read by what the reader has for it: its own schema, or its
    additionalProperties."""
    mine, theirs = _object_parts(r), _object_parts(w)
    if mine is None or theirs is None:
        return _equal_or_refuse(scope, r, w, ("properties", "additionalProperties"), path)
    (props, more), (given, extra) = mine, theirs
    for name, schema in given.items():
        if reason := _kept_property(scope, props, more, path, name, schema):
            return reason
    for name, schema in props.items():
        if name not in given and (reason := _added_property(scope, schema, w, extra, path, name)):
            return reason
    return _additional_rule(scope, more, extra, path)


def _kept_property(
    scope: Scope, props: Schema, more: object, path: str, name: str, schema: object
) -> str | None:
    """A property the writer names: the reader's schema for it, or its
    additionalProperties, must read it."""
    where = f"{path}/properties/{segment(name)}"
    if name in props:
        return scope.sub(props[name], schema, where)
    if more is False:
        if scope.holds(False, schema, where):  # the writer never writes it
            return None
        return f"{where}: property removed from a closed content model"
    return scope.sub(more, schema, f"{path}/additionalProperties")


def _additional_rule(scope: Scope, more: object, extra: object, path: str) -> str | None:
    """Properties neither names: the reader's additionalProperties reads the writer's."""
    if extra is False or more is True:
        return None
    where = f"{path}/additionalProperties"
    if more is not False:
        return scope.sub(more, extra, where)
    if extra is not True and scope.holds(False, extra, where):
        return None  # the writer has no additional property either
    return f"{where}: the open content model was closed"


def _added_property(
    scope: Scope, schema: object, w: Schema, extra: object, path: str, name: str
) -> str | None:
    """A property the reader names and the writer does not: the writer's data holds it
    as its additionalProperties (or its patternProperties) let it."""
    where = f"{path}/properties/{segment(name)}"
    patterns = w.get("patternProperties", EMPTY)
    if not isinstance(patterns, dict):
        return unchecked(path, "patternProperties")
    for pattern in patterns.values():  # the name may match any of them
        if reason := scope.sub(schema, pattern, where):
            return reason
    if extra is False:
        return None
    if extra is not True:
        return scope.sub(schema, extra, where)
    if scope.holds(schema, EMPTY, where):
        return None
    return f"{where}: property added to an open content model"


def _required_rule(scope: Scope, r: Schema, w: Schema, path: str) -> str | None:
    needed = r.get("required", [])
    if not isinstance(needed, list) or not all(isinstance(n, str) for n in needed):
        return _equal_or_refuse(scope, r, w, ("required",), path)
    given = w.get("required")
    present = (
        set(given) if isinstance(given, list) and all(isinstance(n, str) for n in given) else set()
    )
    for name in needed:
        if name not in present:
            return f"{path}/required: required property {show(name)} added"
    return None


def contextual_rule(r: Schema, w: Schema, path: str) -> str | None:
    for key in CONTEXTUAL:
        if key in r or key in w:
            return f"{path}: kop does not check changes of schemas with {key}"
    return None


RULES: Final[tuple[_Rule, ...]] = (
    _unmodelled_rule,
    _type_rule,
    _values_rule,
    _number_rules,
    _string_rules,
    _format_rule,
    _array_rules,
    _object_rules,
)
