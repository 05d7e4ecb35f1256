"""Whether a JSON Schema reads everything another one accepts: the compatibility check of
JSON Schema subjects, as Confluent's Schema Registry makes it. BACKWARD asks
why_cannot_read(reader=new, writer=old), FORWARD why_cannot_read(reader=old, writer=new).

Why it is written so: the registry must never let in an evolution after which a reader
rejects data that was, or will be, written under the writer's schema. So the check is
conservative: it may refuse a change that is in fact compatible, never the other way
round. It models the keywords evolutions touch (type, enum and const, the number,
string, array and object keywords, format, $ref, allOf, anyOf, oneOf); every other
validation keyword (not, if/then/else, patternProperties, dependencies, propertyNames,
contains, prefixItems, additionalItems...) must be equal on both sides, or it is
refused, as is one that only the writer has where a property or an item is read. Keys
that are no validation keyword (title, description, default, examples, $comment,
readOnly, vendor keys such as Kafka Connect's "connect.index"...) are annotations,
which validators ignore: they never matter, and schemas equal but for them are equal.

Where Confluent's diff accepts more, kop refuses what it cannot prove:
- a oneOf in the reader reads the writer only when the writer's data cannot match two
  of its branches: branches of other types or consts, a required property the other
  branch forbids, or a branch no wider than one of the writer's own oneOf (Confluent
  does not look for overlapping branches at all);
- siblings of $ref count (2019-09 and later) and are ignored (draft-07 and earlier)
  alike: what holds under both readings is accepted;
- both documents must declare the same $schema, as keywords change meaning between
  drafts (draft-04's boolean exclusiveMinimum, its lack of const); $ref is followed
  inside the document only, by JSON pointer, and not in one that embeds another $id;
  a $ref to another document only to the same document;
- unevaluatedProperties, unevaluatedItems, $recursiveRef and $dynamicRef depend on the
  whole schema around them: a schema that holds one must not change at all.

Messages start with the JSON pointer of where the reader fails (into the reader's schema;
after a $ref, into its target) and say what changed from the writer's schema to the
reader's ("removed": the writer has it, the reader does not).

The work is bounded for hostile documents (a client sends both): at most 64 levels of
nesting, 50,000 comparisons per request (over all the versions it is checked against)
and 1,024 alternatives of a writer's anyOf/oneOf; past them the change is refused.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, TypeGuard
from urllib.parse import unquote, urldefrag, urljoin

Schema = dict[str, object]
_Key = tuple[int, int]
_Origin = tuple[list[object], int]  # the writer's oneOf list, and the branch taken

_MAX_DEPTH: Final = 64
_MAX_COMPARISONS: Final = 50_000
_MAX_ALTERNATIVES: Final = 1024
_MAX_MESSAGE: Final = 400
_FEW: Final = 16  # a oneOf this small has each branch tried against each

_MISSING: Final = object()
_EMPTY: Final[Schema] = {}  # accepts anything; never mutated
_NOTHING: Final[Schema] = {"type": []}  # the schema `false`, as an object

_KINDS: Final = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
_COMBINATORS: Final = ("$ref", "anyOf", "oneOf", "allOf")
_MODELLED: Final = frozenset(
    {
        *_COMBINATORS,
        *("type", "enum", "const", "format", "multipleOf"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
        *("minLength", "maxLength", "pattern", "items", "minItems", "maxItems", "uniqueItems"),
        *("properties", "additionalProperties", "required", "minProperties", "maxProperties"),
    }
)
# Validation keywords kop does not model: a change of one is refused.
_UNMODELLED: Final = frozenset(
    {
        *("not", "if", "then", "else", "patternProperties", "propertyNames"),
        *("dependencies", "dependentSchemas", "dependentRequired"),
        *("contains", "minContains", "maxContains", "prefixItems", "additionalItems"),
        *("disallow", "extends", "divisibleBy"),  # draft-03
    }
)
# Keywords whose meaning depends on the whole schema around them.
_CONTEXTUAL: Final = frozenset(
    {"unevaluatedProperties", "unevaluatedItems", "$recursiveRef", "$dynamicRef"}
)
# Unmodelled keywords that make the writer's modelled ones accept more: one the writer
# alone has makes the modelled rules unsound, so it is refused wherever it is.
_LOOSENING: Final = frozenset({"patternProperties", "prefixItems", "minContains", "maxContains"})
_VALIDATION: Final = _MODELLED | _UNMODELLED | _CONTEXTUAL
# Keywords that are read together: a merge that takes them from different schemas
# would accept less than either, so such a merge leaves the whole group out.
_GROUPS: Final = (
    ("items", "additionalItems"),
    ("if", "then", "else"),
    ("minimum", "exclusiveMinimum"),
    ("maximum", "exclusiveMaximum"),
    ("contains", "minContains", "maxContains"),
)


def why_cannot_read(reader: object, writer: object, budget: Budget | None = None) -> str | None:
    """None when every JSON instance valid under `writer` is valid under `reader`
    (the reader can read all data written with the writer's schema); else one line
    saying why not, naming the JSON pointer path where it fails (e.g.
    "#/properties/age: type number narrowed to integer").

    `reader` and `writer` are parsed JSON Schema documents (as json.loads gives them).
    Never raises. oneOf is checked for overlapping branches only as far as the module
    docstring says; a change kop cannot prove compatible is refused. `budget`: the
    comparisons left to the whole request (one per call when None), so that a subject's
    long history does not multiply the work a client may ask for."""
    if _strictly_equal(reader, writer):
        return None
    keys = _Texts()
    try:
        return _one_line(_check(reader, writer, keys, budget or Budget()))
    except _Abort as abort:
        return _one_line(abort.reason)
    except RecursionError:
        return "#: the schemas are nested too deeply to compare"


def _check(reader: object, writer: object, keys: _Texts, budget: Budget) -> str | None:
    mine, theirs = _Doc(reader), _Doc(writer)
    accepts_all = reader is True or (isinstance(reader, dict) and _trivial(reader))
    if mine.dialect != theirs.dialect and not accepts_all and writer is not False:
        return (
            f"#: $schema changed from {theirs.dialect or 'none'} to {mine.dialect or 'none'}: "
            "kop does not compare schemas of different JSON Schema versions"
        )
    comparison = _Comparison(mine, theirs, budget, keys)
    return comparison.run(mine.root, theirs.root, "#", 0, 0)


class _Abort(Exception):
    """The comparison stops: too large or too deep. The change is refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """The comparisons a request may still make; spent, the change is refused."""

    def __init__(self) -> None:
        self.left = _MAX_COMPARISONS

    def spend(self, path: str, cost: int = 1) -> None:
        self.left -= cost
        if self.left < 0:
            raise _Abort(f"{path}: the schemas are too large to compare")


# --- JSON values: canonical text, kinds, listed values -----------------------------


def _dump(value: object) -> str | None:
    """The canonical text of a JSON value: equal texts, equal values. Unlike ==, it
    tells true from 1 and 1 from 1.0 (refusing on 1 vs 1.0 is merely conservative)."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (RecursionError, TypeError, ValueError):
        return None


def _strictly_equal(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        if a != b:
            return False
    except RecursionError:
        return False
    text = _dump(a)
    return text is not None and text == _dump(b)


# Keywords whose value holds schemas: one, a list of them, or a map of names to them.
_ONE_SCHEMA: Final = frozenset(
    {
        *("additionalProperties", "additionalItems", "items", "contains", "not"),
        *("propertyNames", "if", "then", "else", "contentSchema"),
        *("unevaluatedProperties", "unevaluatedItems"),
    }
)
_SCHEMA_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_MAP: Final = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "definitions", "$defs", "dependencies"}
)
# What a schema's meaning rests on: the rest are annotations, which validators ignore.
_MEANINGFUL: Final = (
    _VALIDATION
    | _SCHEMA_MAP
    | {"$id", "id", "$schema", "$anchor"}
    | {
        "$dynamicAnchor",
        "$recursiveAnchor",
    }
)


class _Texts:
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
            return _dump(value), ()
        hit = self._keys.get((id(value), keyword))
        if hit is None:
            try:
                essence = self._keyword(keyword, value) if keyword else self._essence(value)
            except RecursionError:
                hit = (value, None, None)
            else:
                text = _dump(essence)
                marked = text is not None and any(f'"{k}"' in text for k in _REFERENCES)
                hit = (value, text, _refs_in(essence) if marked else ())
            self._keys[(id(value), keyword)] = hit
        return hit[1], hit[2]

    def _essence(self, schema: object) -> object:
        if not isinstance(schema, dict):
            return schema
        hit = self._essences.get(id(schema))
        if hit is None:
            kept = {k: self._keyword(k, v) for k, v in schema.items() if k in _MEANINGFUL}
            hit = self._essences[id(schema)] = (schema, kept)
        return hit[1]

    def _keyword(self, keyword: str, value: object) -> object:
        if keyword in _SCHEMA_LIST and isinstance(value, list):
            return [self._essence(v) for v in value]
        if keyword in _SCHEMA_MAP and isinstance(value, dict):
            return {name: self._essence(v) for name, v in value.items()}
        return self._essence(value) if keyword in _ONE_SCHEMA else value


_REFERENCES: Final = ("$ref", "$recursiveRef", "$dynamicRef")


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
            ref = node.get("$ref", _MISSING)
            if ref is not _MISSING:
                if not isinstance(ref, str):
                    return None
                found[ref] = None
            stack.extend(node.values())
    return tuple(found)


def _is_number(value: object) -> TypeGuard[int | float]:
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


def _type_names(value: object) -> frozenset[str] | None:
    """The types a `type` keyword names; None if it is malformed (or names "any")."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _KINDS for n in names):
        return None
    return frozenset(str(n) for n in names)


def _meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """The kinds of values both sets allow ("integer" is in "number")."""
    both = set(a & b)
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        both.add("integer")
    return frozenset(both)


def _listed(schema: Schema) -> list[object] | None:
    """The values `schema` lists (const, enum, or both), if it lists them."""
    enum = schema.get("enum")
    if "const" not in schema:
        return list(enum) if isinstance(enum, list) else None
    const = schema["const"]
    if isinstance(enum, list) and _dump(const) not in _texts(enum):
        return []
    return [const]


def _kinds(schema: Schema) -> frozenset[str]:
    """The kinds of values `schema` may accept (more than it does, never fewer)."""
    names = _type_names(schema.get("type", list(_KINDS)))
    kinds = _KINDS if names is None else names
    listed = _listed(schema)
    if listed is not None:
        kinds = _meet(kinds, frozenset(_kind_of(v) for v in listed))
    return kinds


def _finite(schema: Schema, kinds: frozenset[str]) -> list[object] | None:
    """Every value `schema` may accept, when they are few (None: they are not)."""
    listed = _listed(schema)
    if listed is None:
        if not kinds <= {"null", "boolean"}:
            return None
        listed = ([None] if "null" in kinds else []) + ([True, False] if "boolean" in kinds else [])
    return [v for v in listed if _meet(kinds, frozenset({_kind_of(v)}))]


def _accepts_nothing(schema: Schema) -> bool:
    kinds = _kinds(schema)
    return not kinds or _finite(schema, kinds) == []


def _trivial(schema: Schema) -> bool:
    """True when `schema` holds no validation keyword: it accepts anything."""
    return not any(key in _VALIDATION for key in schema)


def _texts(values: list[object]) -> set[str | None]:
    return {_dump(v) for v in values}


# --- messages ----------------------------------------------------------------------


def _segment(name: str) -> str:
    """A property name as a JSON pointer token (RFC 6901), shortened if long."""
    token = str(name).replace("~", "~0").replace("/", "~1")
    return token if len(token) <= 100 else token[:100] + "…"


def _show(value: object) -> str:
    text = _dump(value) or "?"
    return text if len(text) <= 80 else text[:80] + "…"


def _names(kinds: frozenset[str]) -> str:
    ordered = sorted(kinds)
    return ordered[0] if len(ordered) == 1 else json.dumps(ordered, separators=(",", ":"))


def _one_line(text: str | None) -> str | None:
    """`text` on one line, its middle left out if it is long (the end says why)."""
    if text is None:
        return None
    line = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    if len(line) <= _MAX_MESSAGE:
        return line
    return line[: _MAX_MESSAGE // 4] + "…" + line[-_MAX_MESSAGE // 2 :]


def _unchecked(path: str, key: str) -> str:
    return f"{path}: kop does not check changes of {key}"


def _rebase(stored: tuple[str, str], path: str) -> str:
    """A reason found at another path for the same pair, moved to `path`."""
    old, reason = stored
    if reason.startswith((old + "/", old + ":")):
        return path + reason[len(old) :]
    return reason


# --- documents: $ref resolution --------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Target:
    node: object
    pointer: str


@dataclass(frozen=True, slots=True)
class _External:
    uri: str  # absolute when the document has a base URI


@dataclass(frozen=True, slots=True)
class _Unresolved:
    reason: str


_Resolved = _Target | _External | _Unresolved


def _subschemas(node: Schema) -> Iterator[object]:
    """The schemas directly inside `node`, by the applicator keywords of every draft."""
    for key, value in node.items():
        if key in _SCHEMA_LIST and isinstance(value, list):
            yield from value
        elif key in _SCHEMA_MAP and isinstance(value, dict):
            yield from value.values()
        elif key in _ONE_SCHEMA and isinstance(value, dict):
            yield value


def _embeds_id(root: object) -> bool:
    """True if a schema below the root has an $id (id in draft-04): $ref inside it
    resolve against it, which kop does not follow."""
    stack = list(_subschemas(root)) if isinstance(root, dict) else []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str) or isinstance(node.get("id"), str):
                return True
            stack.extend(_subschemas(node))
    return False


def _dialect(root: object) -> str | None:
    declared = root.get("$schema") if isinstance(root, dict) else None
    if declared is None:
        return None
    if not isinstance(declared, str):
        return _dump(declared)
    uri = declared.strip().rstrip("#")
    return "http://" + uri.removeprefix("https://") if uri.startswith("https://") else uri


def _strip(schema: object, keyword: str) -> object:
    """`schema` without `keyword` wherever a schema is (for a draft that lacks it)."""
    if not isinstance(schema, dict):
        return schema
    out: Schema = {}
    for key, value in schema.items():
        if key == keyword:
            continue
        if key in _SCHEMA_LIST and isinstance(value, list):
            out[key] = [_strip(v, keyword) for v in value]
        elif key in _SCHEMA_MAP and isinstance(value, dict):
            out[key] = {name: _strip(v, keyword) for name, v in value.items()}
        else:
            out[key] = _strip(value, keyword) if key in _ONE_SCHEMA else value
    return out


class _Doc:
    """One side's document: where its $ref lead. In draft-04 and earlier, `const` is
    no keyword: validators ignore it, and so does kop."""

    def __init__(self, root: object) -> None:
        self.dialect = _dialect(root)
        self.draft4 = self.dialect is not None and (
            "draft-04" in self.dialect or "draft-03" in self.dialect
        )
        self.root = _strip(root, "const") if self.draft4 else root
        base = None
        if isinstance(root, dict):
            base = next((v for v in (root.get("$id"), root.get("id")) if isinstance(v, str)), None)
        self.base = urldefrag(base).url if base else None
        self.embeds_id = _embeds_id(root)
        self._resolved: dict[str, _Resolved] = {}

    def resolve(self, ref: object) -> _Resolved:
        if not isinstance(ref, str):
            return _Unresolved("kop does not follow a $ref that is not a string")
        found = self._resolved.get(ref)
        if found is None:
            found = self._resolved[ref] = self._resolve(ref)
        return found

    def _resolve(self, ref: str) -> _Resolved:
        if self.embeds_id:
            return _Unresolved("kop does not follow $ref in a schema that embeds another $id")
        try:
            document, fragment = urldefrag(urljoin(self.base, ref) if self.base else ref)
        except ValueError:
            return _Unresolved(f"kop cannot resolve $ref {_show(ref)}")
        if document and document != self.base:
            return _External(document + "#" + fragment)
        return self._pointer(ref, fragment)

    def _pointer(self, ref: str, fragment: str) -> _Resolved:
        if fragment and not fragment.startswith("/"):
            return _Unresolved(f"kop follows $ref by JSON pointer only, not {_show(ref)}")
        node = self.root
        for token in unquote(fragment).split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return _Unresolved(f"$ref {_show(ref)} leads nowhere in its document")
        return _Target(node, "#" + fragment)


# --- the writer's schema as alternatives -----------------------------------------


@dataclass(frozen=True, slots=True)
class _Alt:
    """One part of what the writer accepts, without $ref, anyOf, oneOf or allOf.
    `opaque`: a $ref kop cannot follow, known only by that $ref."""

    node: Schema
    opaque: bool = False
    origin: _Origin | None = None


def _without(node: Schema, key: str) -> Schema:
    return {k: v for k, v in node.items() if k != key}


_LARGEST: Final = frozenset({"minLength", "minItems", "minProperties", "minimum"})
_SMALLEST: Final = frozenset({"maxLength", "maxItems", "maxProperties", "maximum"})
_BOTH_READ: Final = frozenset({"items", "additionalProperties"})


def _conjunction(key: str, mine: object, value: object) -> object:
    """The value of `key` in a schema that accepts what a schema with `mine` and one
    with `value` both accept, or more (`value`, when kop cannot tell)."""
    if _is_number(mine) and _is_number(value):
        if key in _LARGEST or key == "exclusiveMinimum":
            return max(mine, value)
        if key in _SMALLEST or key == "exclusiveMaximum":
            return min(mine, value)
    if (
        key == "multipleOf"
        and isinstance(mine, int)
        and isinstance(value, int)
        and mine > 0 < value
    ):
        return math.lcm(mine, value)
    if key == "required" and isinstance(mine, list) and isinstance(value, list):
        return list(dict.fromkeys([*mine, *value]))
    a, b = _type_names(mine), _type_names(value)
    if key == "type" and a is not None and b is not None:
        return sorted(_meet(a, b))
    if key == "enum" and isinstance(mine, list) and isinstance(value, list):
        return [v for v in value if _dump(v) in _texts(mine)]
    if key == "uniqueItems" and isinstance(mine, bool) and isinstance(value, bool):
        return mine or value
    if key in _BOTH_READ and isinstance(mine, dict | bool) and isinstance(value, dict | bool):
        if mine is False or value is True or _dump(mine) == _dump(value):
            return mine
        return value if value is False or mine is True else {"allOf": [mine, value]}
    if key == "properties" and isinstance(mine, dict) and isinstance(value, dict):
        both = {p: {"allOf": [mine[p], s]} if p in mine else s for p, s in value.items()}
        return {**mine, **both}
    if key == "allOf" and isinstance(mine, list) and isinstance(value, list):
        # once each: a self-referencing allOf would double the list at every step
        return list({_dump(branch): branch for branch in [*mine, *value]}.values())
    return value


def _merge(base: Schema, extra: Schema) -> Schema:
    """A schema that accepts at least what both accept (exactly that, where it can)."""
    out = dict(base)
    for key, value in extra.items():
        mine = out.get(key, _MISSING)
        if mine is _MISSING:
            out[key] = value
        elif key in ("anyOf", "oneOf"):
            kept = out.get("allOf")
            out["allOf"] = [*(kept if isinstance(kept, list) else []), {key: value}]
        elif key == "const" and _dump(mine) != _dump(value):
            out["enum"] = []  # two consts: nothing
        else:
            out[key] = _conjunction(key, mine, value)
    for group in _GROUPS:
        if group[0] in ("minimum", "maximum") and not any(
            isinstance(s.get(group[1]), bool) for s in (base, extra)
        ):
            continue  # independent bounds, unless draft-04's boolean exclusive* reads both
        if any(k in extra for k in group) and any(k in base and k not in extra for k in group):
            for k in group:
                out.pop(k, None)
    return out


def _deref(node: object, doc: _Doc) -> object:
    """`node`, or what its $ref leads to (its siblings dropped: it accepts no less)."""
    for _ in range(_MAX_DEPTH):
        if not (isinstance(node, dict) and "$ref" in node):
            return node
        target = doc.resolve(node["$ref"])
        if not isinstance(target, _Target):
            return node
        node = target.node
    return node


class _Expander:
    """The writer's schema as a list of alternatives that together accept at least what
    it accepts: $ref followed, anyOf and oneOf split, allOf merged."""

    def __init__(self, doc: _Doc, keep: list[object], budget: Budget) -> None:
        self.doc = doc
        self.keep = keep  # merged schemas outlive the comparison: ids key its memo
        self.budget = budget

    def alternatives(self, writer: Schema, path: str) -> list[_Alt]:
        done: list[_Alt] = []
        todo: list[tuple[object, _Origin | None, int]] = [(writer, None, 0)]
        while todo:
            node, origin, steps = todo.pop()
            self.budget.spend(path)
            if len(done) + len(todo) > _MAX_ALTERNATIVES:
                raise _Abort(f"{path}: the schemas are too large to compare")
            if steps > _MAX_DEPTH:
                raise _Abort(f"{path}: the writer's $ref, anyOf, oneOf and allOf nest too deeply")
            if node is False:
                continue
            step = self._step(node if isinstance(node, dict) else _EMPTY, origin)
            if isinstance(step, _Alt):
                done.append(step)
            else:
                todo.extend((n, o, steps + 1) for n, o in step)
        return done

    def _step(
        self, node: Schema, origin: _Origin | None
    ) -> _Alt | list[tuple[object, _Origin | None]]:
        if "$ref" in node:
            target = self.doc.resolve(node["$ref"])
            if isinstance(target, _Target):
                return [(target.node, origin)]
            return _Alt(node, opaque=True, origin=origin)
        for key in ("anyOf", "oneOf"):
            if key in node:
                return self._split(node, key, origin)
        if "allOf" in node:
            merged: Schema | None = _without(node, "allOf")
            branches = node["allOf"]
            for branch in branches if isinstance(branches, list) else []:
                merged = self._conjoin(merged, branch) if merged is not None else None
            return [] if merged is None else [(merged, origin)]
        return _Alt(node, origin=origin)

    def _split(
        self, node: Schema, key: str, origin: _Origin | None
    ) -> list[tuple[object, _Origin | None]]:
        rest, branches = _without(node, key), node[key]
        if not isinstance(branches, list):
            return [(rest, origin)]
        out: list[tuple[object, _Origin | None]] = []
        for index, branch in enumerate(branches):
            merged = self._conjoin(rest, branch)
            if merged is not None:
                taken = (branches, index) if origin is None and key == "oneOf" else origin
                out.append((merged, taken))
        return out

    def _conjoin(self, base: Schema, branch: object) -> Schema | None:
        """What `base` and `branch` both accept, or more; None: nothing."""
        extra = _deref(branch, self.doc)
        if extra is False:
            return None
        if not isinstance(extra, dict):
            return base
        if "$ref" in extra:  # a $ref kop cannot follow: kept alone, or left out
            return extra if _trivial(base) else base
        merged = _merge(base, extra)
        branches = merged.get("allOf")
        # a merge costs what it carries: hostile nesting grows merges, not just their number
        self.budget.spend("#", 1 + (len(branches) if isinstance(branches, list) else 0))
        self.keep.append(merged)
        return merged


# --- the keyword rules: does the writer's flat schema `w` satisfy the reader's `r` ---


class _Scope:
    """What a keyword rule needs of the comparison: sameness of values, and a descent
    into the data (a property, an item)."""

    def __init__(self, comparison: _Comparison, depth: int, level: int) -> None:
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


_Rule = Callable[[_Scope, Schema, Schema, frozenset[str], str], str | None]


def _equal_or_refuse(
    scope: _Scope, r: Schema, w: Schema, keys: tuple[str, ...], path: str
) -> str | None:
    for key in keys:
        mine, theirs = r.get(key, _MISSING), w.get(key, _MISSING)
        if mine is _MISSING and theirs is _MISSING:
            continue
        if mine is _MISSING or theirs is _MISSING or not scope.same(mine, theirs, key):
            return _unchecked(path, key)
    return None


def _unmodelled_rule(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    for key in r:
        if key in _UNMODELLED and (reason := _equal_or_refuse(scope, r, w, (key,), path)):
            return reason
    for key in w:
        if key in _LOOSENING and key not in r:
            return _unchecked(path, key)
    return None


def _type_rule(scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str) -> str | None:
    if "type" not in r:
        return None
    allowed = _type_names(r["type"])
    if allowed is None:
        return _equal_or_refuse(scope, r, w, ("type",), path)
    if not allowed:
        return f"{path}: the reader's schema accepts nothing"
    if all(k in allowed or (k == "integer" and "number" in allowed) for k in kinds):
        return None
    if "type" not in w and _listed(w) is None:
        return f"{path}: type {_names(allowed)} added"
    return f"{path}: type {_names(kinds)} narrowed to {_names(allowed)}"


def _values_rule(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    for key in ("const", "enum"):
        if key not in r:
            continue
        allowed = [r[key]] if key == "const" else r[key]
        if not isinstance(allowed, list):
            return _equal_or_refuse(scope, r, w, (key,), path)
        values = _finite(w, kinds)
        if values is None:
            return f"{path}: {key} added"
        texts = _texts(allowed) - {None}
        for value in values:
            if _dump(value) not in texts:
                return f"{path}: {key} narrowed: the writer allows {_show(value)}"
    return None


def _bounds(s: Schema, keys: tuple[str, str], draft4: bool) -> list[tuple[float, bool, str]] | None:
    """The bounds `s` sets by `keys` (inclusive, exclusive): (value, exclusive, keyword);
    None if they are malformed for the draft (draft-04: exclusive* is a boolean)."""
    inclusive, exclusive = keys
    low, strict = s.get(inclusive, _MISSING), s.get(exclusive, _MISSING)
    if low is not _MISSING and not _is_number(low):
        return None
    out: list[tuple[float, bool, str]] = []
    if draft4:
        if strict is not _MISSING and not isinstance(strict, bool):
            return None
        if isinstance(low, int | float):
            out.append((low, strict is True, "exclusive " * (strict is True) + inclusive))
        return out
    if strict is not _MISSING and not _is_number(strict):
        return None
    if isinstance(low, int | float):
        out.append((low, False, inclusive))
    if isinstance(strict, int | float):
        out.append((strict, True, exclusive))
    return out


def _bound_rule(
    scope: _Scope, r: Schema, w: Schema, keys: tuple[str, str], path: str
) -> str | None:
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
                return f"{path}: {key} {_show(value)} added"
            bound, _, name = theirs[0]
            return f"{path}: {key} {_show(value)} narrows the writer's {name} {_show(bound)}"
    return None


def _multiple_rule(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if "multipleOf" not in r:
        return None
    mine, theirs = r["multipleOf"], w.get("multipleOf", _MISSING)
    if not _is_number(mine) or (theirs is not _MISSING and not _is_number(theirs)):
        return _equal_or_refuse(scope, r, w, ("multipleOf",), path)
    if theirs is not _MISSING and _dump(mine) == _dump(theirs):
        return None
    # exact in floats too (validators divide a float instance by the float of them)
    small = isinstance(mine, int) and isinstance(theirs, int) and 0 < mine <= theirs < 2**53
    if small and isinstance(mine, int) and isinstance(theirs, int) and theirs % mine == 0:
        return None
    if mine == 1 and isinstance(mine, int) and kinds & {"number", "integer"} == {"integer"}:
        return None  # every integer is a multiple of 1
    if theirs is _MISSING:
        return f"{path}: multipleOf {_show(mine)} added"
    return f"{path}: multipleOf changed from {_show(theirs)} to {_show(mine)}"


def _number_rules(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if not kinds & {"number", "integer"}:
        return None
    return (
        _bound_rule(scope, r, w, ("minimum", "exclusiveMinimum"), path)
        or _bound_rule(scope, r, w, ("maximum", "exclusiveMaximum"), path)
        or _multiple_rule(scope, r, w, kinds, path)
    )


def _size_rule(scope: _Scope, r: Schema, w: Schema, key: str, path: str) -> str | None:
    """minLength, maxItems...: a minimum may only fall, a maximum only rise."""
    if key not in r:
        return None
    lower = key.startswith("min")
    mine, theirs = r[key], w.get(key, _MISSING)
    if not _is_number(mine) or (theirs is not _MISSING and not _is_number(theirs)):
        return _equal_or_refuse(scope, r, w, (key,), path)
    if not _is_number(theirs):  # absent
        return None if lower and mine <= 0 else f"{path}: {key} {_show(mine)} added"
    if theirs >= mine if lower else theirs <= mine:
        return None
    return f"{path}: {key} changed from {_show(theirs)} to {_show(mine)}"


def _same_string_rule(scope: _Scope, r: Schema, w: Schema, key: str, path: str) -> str | None:
    """pattern, format: the reader may drop one, not add or change it."""
    if key not in r:
        return None
    if not isinstance(r[key], str):
        return _equal_or_refuse(scope, r, w, (key,), path)
    if key not in w:
        return f"{path}: {key} {_show(r[key])} added"
    if r[key] != w[key]:
        return f"{path}: {key} changed from {_show(w[key])} to {_show(r[key])}"
    return None


def _string_rules(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    if "string" not in kinds:
        return None
    return (
        _size_rule(scope, r, w, "minLength", path)
        or _size_rule(scope, r, w, "maxLength", path)
        or _same_string_rule(scope, r, w, "pattern", path)
    )


def _format_rule(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
) -> str | None:
    return _same_string_rule(scope, r, w, "format", path)


def _items_rule(scope: _Scope, r: Schema, w: Schema, path: str) -> str | None:
    if "items" not in r:
        return None
    mine, theirs = r["items"], w.get("items", _EMPTY)
    if not isinstance(mine, dict | bool) or not isinstance(theirs, dict | bool):
        return _equal_or_refuse(scope, r, w, ("items",), path)  # the tuple form
    return scope.sub(mine, theirs, f"{path}/items")


def _array_rules(
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
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
    scope: _Scope, r: Schema, w: Schema, kinds: frozenset[str], path: str
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
    props, more = s.get("properties", _EMPTY), s.get("additionalProperties", True)
    if isinstance(props, dict) and isinstance(more, dict | bool):
        return props, more
    return None


def _properties_rule(scope: _Scope, r: Schema, w: Schema, path: str) -> str | None:
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
    scope: _Scope, props: Schema, more: object, path: str, name: str, schema: object
) -> str | None:
    """A property the writer names: the reader's schema for it, or its
    additionalProperties, must read it."""
    where = f"{path}/properties/{_segment(name)}"
    if name in props:
        return scope.sub(props[name], schema, where)
    if more is False:
        if scope.holds(False, schema, where):  # the writer never writes it
            return None
        return f"{where}: property removed from a closed content model"
    return scope.sub(more, schema, f"{path}/additionalProperties")


def _additional_rule(scope: _Scope, more: object, extra: object, path: str) -> str | None:
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
    scope: _Scope, schema: object, w: Schema, extra: object, path: str, name: str
) -> str | None:
    """A property the reader names and the writer does not: the writer's data holds it
    as its additionalProperties (or its patternProperties) let it."""
    where = f"{path}/properties/{_segment(name)}"
    patterns = w.get("patternProperties", _EMPTY)
    if not isinstance(patterns, dict):
        return _unchecked(path, "patternProperties")
    for pattern in patterns.values():  # the name may match any of them
        if reason := scope.sub(schema, pattern, where):
            return reason
    if extra is False:
        return None
    if extra is not True:
        return scope.sub(schema, extra, where)
    if scope.holds(schema, _EMPTY, where):
        return None
    return f"{where}: property added to an open content model"


def _required_rule(scope: _Scope, r: Schema, w: Schema, path: str) -> str | None:
    needed = r.get("required", [])
    if not isinstance(needed, list) or not all(isinstance(n, str) for n in needed):
        return _equal_or_refuse(scope, r, w, ("required",), path)
    given = w.get("required")
    present = (
        set(given) if isinstance(given, list) and all(isinstance(n, str) for n in given) else set()
    )
    for name in needed:
        if name not in present:
            return f"{path}/required: required property {_show(name)} added"
    return None


def _contextual_rule(r: Schema, w: Schema, path: str) -> str | None:
    for key in _CONTEXTUAL:
        if key in r or key in w:
            return f"{path}: kop does not check changes of schemas with {key}"
    return None


_RULES: Final[tuple[_Rule, ...]] = (
    _unmodelled_rule,
    _type_rule,
    _values_rule,
    _number_rules,
    _string_rules,
    _format_rule,
    _array_rules,
    _object_rules,
)


# --- the comparison ----------------------------------------------------------------


class _Sameness:
    """Which schemas mean the same on both sides, $ref followed."""

    def __init__(self, reader: _Doc, writer: _Doc, budget: Budget, texts: _Texts) -> None:
        self.reader, self.writer, self.budget, self.texts = reader, writer, budget, texts
        self.consistent: dict[str, bool] = {}
        self.unmodelled: dict[tuple[int, int], tuple[object, frozenset[str]]] = {}

    def same(self, a: object, b: object, keyword: str = "") -> bool:
        """Schemas (or values of `keyword`) that mean the same: equal but for
        annotations, and every $ref in them leads to such schemas on both sides."""
        text, refs = self.texts.key(a, keyword)
        if text is None or refs is None or text != self.texts.key(b, keyword)[0]:
            return False
        return all(self.same_ref(ref, ref) for ref in refs)

    def same_ref(self, mine: object, theirs: object) -> bool:
        if not isinstance(mine, str) or mine != theirs:
            return False
        known = self.consistent.get(mine)
        if known is None:
            known = self._consistent(mine)
        return known

    def _consistent(self, first: str) -> bool:
        """True if `first`, and every $ref reachable from it, leads to equal schemas
        on both sides. A failure marks the chain of $ref that led to it."""
        parents: dict[str, str | None] = {first: None}
        todo = [first]
        while todo:
            ref = todo.pop()
            self.budget.spend("#")
            inner = self._inner(ref)
            failed = (
                ref
                if inner is None
                else next((i for i in inner if self.consistent.get(i) is False), None)
            )
            if failed is not None:
                chain: str | None = ref
                while chain is not None:
                    self.consistent[chain] = False
                    chain = parents[chain]
                return False
            for i in inner or ():
                if i not in parents and i not in self.consistent:
                    parents[i] = ref
                    todo.append(i)
        self.consistent.update(dict.fromkeys(parents, True))
        return True

    def _inner(self, ref: str) -> tuple[str, ...] | None:
        """The $refs in what `ref` leads to, if it leads to equal schemas on both
        sides (None if not)."""
        mine, theirs = self.reader.resolve(ref), self.writer.resolve(ref)
        if isinstance(mine, _External) and mine == theirs:
            return ()
        if not (isinstance(mine, _Target) and isinstance(theirs, _Target)):
            return None
        text, inner = self.texts.key(mine.node)
        if text is None or text != self.texts.key(theirs.node)[0]:
            return None
        return inner

    def unmodelled_in(self, node: Schema, doc: _Doc) -> frozenset[str]:
        """The unmodelled keywords `node` holds, itself or through its $ref, allOf,
        anyOf and oneOf (a bounded look)."""
        hit = self.unmodelled.get((id(node), id(doc)))
        if hit is None:
            found: set[str] = set()
            todo: list[object] = [node]
            for _ in range(_MAX_DEPTH):
                if not todo:
                    break
                current = _deref(todo.pop(), doc)
                if isinstance(current, dict):
                    found.update(k for k in current if k in _UNMODELLED)
                    for key in ("allOf", "anyOf", "oneOf"):
                        branches = current.get(key)
                        todo.extend(branches if isinstance(branches, list) else [])
            hit = self.unmodelled[(id(node), id(doc))] = (node, frozenset(found))
        return hit[1]


class _Comparison:
    """One direction: does the reader accept everything the writer accepts. Pairs of
    schemas (reader node, writer node) are compared once: the ones under comparison are
    kept with the data level they started at, the ones proved in a log (to forget what a
    failed attempt proved), the ones that failed with why; the properties and items
    met outside an attempt are put off, and compared from the top of the stack."""

    def __init__(self, reader: _Doc, writer: _Doc, budget: Budget, texts: _Texts) -> None:
        self.reader, self.writer, self.budget, self.texts = reader, writer, budget, texts
        self.keep: list[object] = []  # the writer's nodes made here: ids key the memo
        self.expander = _Expander(writer, self.keep, budget)
        self.sameness = _Sameness(reader, writer, budget, texts)
        self.parts = _Parts(self)
        self.active: dict[_Key, int] = {}
        self.proved: set[_Key] = set()
        self.proved_log: list[_Key] = []
        self.failed: dict[_Key, tuple[str, str]] = {}
        self.attempts = 0
        self.queued: set[_Key] = set()
        self.pending: deque[tuple[Schema, Schema, str, int]] = deque()

    def run(self, r: object, w: object, path: str, depth: int, level: int) -> str | None:
        """Why `r` cannot read all `w` accepts (None: it can), the pairs put off
        included: a long chain of $ref through the data does not nest the comparison."""
        reason = self.read(r, w, path, depth, level, whole=True, now=True)
        while reason is None and self.pending:
            r, w, path, level = self.pending.popleft()
            reason = self.read(r, w, path, 0, level, whole=True, now=True)
        return reason

    def read(
        self,
        r: object,
        w: object,
        path: str,
        depth: int,
        level: int,
        whole: bool = False,
        now: bool = False,
    ) -> str | None:
        """Why `r` cannot read all `w` accepts, as far as known now (what is put off
        is compared by `run`). `whole`: `r` and `w` are what the two sides have at one
        place of the data: an unmodelled keyword only the writer has there is refused,
        and the pair is put off unless `now` or within an attempt."""
        self.budget.spend(path)
        if depth > _MAX_DEPTH:
            raise _Abort(f"{path}: the schemas are nested too deeply to compare")
        if r is True or w is False or self.same(r, w):
            return None
        r = _NOTHING if r is False else r
        w = _EMPTY if w is True else w
        if not isinstance(r, dict) or not isinstance(w, dict):
            return f"{path}: kop does not check schemas that are neither an object nor a boolean"
        if _trivial(r):
            return None
        known = self.sameness.unmodelled_in
        extra = known(w, self.writer) - known(r, self.reader)
        if whole and extra:
            return _unchecked(path, sorted(extra)[0])
        if whole and not now and not self.attempts:
            return self._put_off(r, w, path, level)
        return self._memo(r, w, path, depth, level)

    def same(self, a: object, b: object, keyword: str = "") -> bool:
        return self.sameness.same(a, b, keyword)

    def attempt(
        self, r: object, w: object, path: str, depth: int, level: int, whole: bool = False
    ) -> str | None:
        """`read` now, to the end, forgetting what it proved if it fails: those proofs
        may rest on a pair that the failed attempt assumed compatible."""
        mark = len(self.proved_log)
        self.attempts += 1
        try:
            reason = self.read(r, w, path, depth, level, whole)
        finally:
            self.attempts -= 1
        if reason is not None:
            while len(self.proved_log) > mark:
                self.proved.discard(self.proved_log.pop())
        return reason

    def _put_off(self, r: Schema, w: Schema, path: str, level: int) -> str | None:
        """A property's or an item's pair, compared later by `run`: the comparison goes
        on as if it were compatible (sound: `run` fails if it is not)."""
        key = (id(r), id(w))
        if key in self.failed:
            return _rebase(self.failed[key], path)
        if key not in self.proved and key not in self.queued:
            self.queued.add(key)
            self.keep.append(w)
            self.pending.append((r, w, path, level))
        return None

    def _memo(self, r: Schema, w: Schema, path: str, depth: int, level: int) -> str | None:
        """A pair met again while it is compared is taken as compatible (a recursive
        schema), if the data went down a level since: else the cycle reads no data."""
        key = (id(r), id(w))
        started = self.active.get(key)
        if started is not None:
            return None if level > started else f"{path}: a $ref cycle that reads no data"
        if key in self.proved:
            return None
        if key in self.failed:
            return _rebase(self.failed[key], path)
        self.active[key] = level
        self.keep.append(w)
        try:
            reason = self.parts.compare(r, w, path, depth, level)
        finally:
            del self.active[key]
        if reason is None:
            self.proved.add(key)
            self.proved_log.append(key)
        else:
            self.failed[key] = (path, reason)
        return reason


class _Parts:
    """The reader as a conjunction of parts ($ref, allOf, anyOf, oneOf, its own
    keywords), each of which must accept every alternative of the writer."""

    def __init__(self, comparison: _Comparison) -> None:
        self.comparison = comparison
        self.unions = _Unions(comparison)

    def compare(self, r: Schema, w: Schema, path: str, depth: int, level: int) -> str | None:
        parts = self._open(r, w)
        for alt in self.comparison.expander.alternatives(w, path):
            for part in parts:
                if reason := self._part(part, r, alt, path, depth, level):
                    return reason
        return None

    def _open(self, r: Schema, w: Schema) -> list[str]:
        """The reader's parts the writer does not obviously satisfy: a part the writer
        has equal (beside no $ref, which would make draft-07 ignore it) is satisfied."""
        same = self.comparison.sameness
        parts = []
        if "$ref" in r and not ("$ref" in w and same.same_ref(r["$ref"], w["$ref"])):
            parts.append("$ref")
        for key in ("allOf", "anyOf", "oneOf"):
            if key in r and not (key in w and "$ref" not in w and same.same(r[key], w[key], key)):
                parts.append(key)
        return [*parts, "keywords"]

    def _part(
        self, part: str, r: Schema, alt: _Alt, path: str, depth: int, level: int
    ) -> str | None:
        if part == "$ref":
            return self._ref(r["$ref"], alt, path, depth, level)
        if part == "allOf":
            branches = r["allOf"]
            if not isinstance(branches, list):
                return _unchecked(path, "allOf")
            for index, branch in enumerate(branches):
                where = f"{path}/allOf/{index}"
                if reason := self.comparison.read(branch, alt.node, where, depth + 1, level):
                    return reason
            return None
        if part in ("anyOf", "oneOf"):
            return self.unions.read(part, r[part], alt, f"{path}/{part}", depth, level)
        return self._keywords(r, alt, path, depth, level)

    def _ref(self, ref: object, alt: _Alt, path: str, depth: int, level: int) -> str | None:
        c = self.comparison
        target = c.reader.resolve(ref)
        if isinstance(target, _External):
            if alt.opaque and c.writer.resolve(alt.node.get("$ref")) == target:
                return None
            return f"{path}: kop does not follow $ref {_show(ref)} to another document"
        if isinstance(target, _Unresolved):
            return f"{path}: {target.reason}"
        return c.read(target.node, alt.node, target.pointer, depth + 1, level)

    def _keywords(self, r: Schema, alt: _Alt, path: str, depth: int, level: int) -> str | None:
        w = _EMPTY if alt.opaque else alt.node
        if _accepts_nothing(w):
            return None
        if reason := _contextual_rule(r, w, path):
            return reason
        scope, kinds = _Scope(self.comparison, depth, level), _kinds(w)
        for rule in _RULES:
            if reason := rule(scope, r, w, kinds, path):
                return reason
        return None


class _Unions:
    """The reader's anyOf and oneOf: some branch reads each writer's alternative; for
    oneOf, no other branch may match that alternative's data too."""

    def __init__(self, comparison: _Comparison) -> None:
        self.comparison = comparison
        self.index: dict[int, tuple[object, dict[str | None, int]]] = {}

    def read(
        self, kind: str, branches: object, alt: _Alt, path: str, depth: int, level: int
    ) -> str | None:
        """Some branch reads the alternative; failing that, each of its types alone
        (a nullable string is read by anyOf [null, string])."""
        if not isinstance(branches, list):
            return _unchecked(path, kind)
        if not alt.opaque and _accepts_nothing(alt.node):
            return None
        reason = self._read(kind, branches, alt, path, depth, level)
        kinds = _kinds(alt.node)
        if reason is None or alt.opaque or len(kinds) < 2:
            return reason
        for each in sorted(kinds):
            node = {**alt.node, "type": each}
            self.comparison.keep.append(node)
            if self._read(kind, branches, _Alt(node, origin=alt.origin), path, depth, level):
                return reason
        return None

    def _read(
        self, kind: str, branches: list[object], alt: _Alt, path: str, depth: int, level: int
    ) -> str | None:
        overlap = None
        for index in self._candidates(branches, alt):
            where = f"{path}/{index}"
            if self.comparison.attempt(branches[index], alt.node, where, depth + 1, level) is None:
                if kind == "anyOf":
                    return None
                found = self._alone(branches, index, alt, path, depth)
                if found is None:
                    return None
                overlap = overlap or found
        return overlap or f"{path}: no branch of the reader's {kind} reads the writer's schema"

    def _candidates(self, branches: list[object], alt: _Alt) -> Iterator[int]:
        """Branch indexes, likeliest first (an equal branch, the writer's oneOf index);
        branches that cannot read the alternative, by type or by value, left out."""
        hit = self.index.get(id(branches))
        if hit is None:
            texts = self.comparison.texts
            by_text = {texts.key(b)[0]: i for i, b in reversed(list(enumerate(branches)))}
            hit = self.index[id(branches)] = (branches, by_text)
        first = [hit[1].get(self.comparison.texts.key(alt.node)[0])]
        if alt.origin is not None:
            first.append(alt.origin[1])
        likely = [i for i in dict.fromkeys(first) if i is not None and i < len(branches)]
        for index in (*likely, *(i for i in range(len(branches)) if i not in likely)):
            if alt.opaque or _may_read(branches[index], alt.node):
                yield index

    def _alone(
        self, branches: list[object], index: int, alt: _Alt, path: str, depth: int
    ) -> str | None:
        w = _EMPTY if alt.opaque else alt.node
        for other, branch in enumerate(branches):
            if other == index or _disjoint(w, _deref(branch, self.comparison.reader)):
                continue
            if self._narrowed(branch, other, alt, depth):
                continue
            return (
                f"{path}: data the writer accepts may match branches {index} and {other} of the "
                "reader's oneOf, which accepts one match only"
            )
        return None

    def _narrowed(self, branch: object, other: int, alt: _Alt, depth: int) -> bool:
        """True if the reader's branch `other` accepts no more than a branch of the
        writer's oneOf this alternative came from, other than the one it took (the
        writer's data matched that one only): an equal branch, the one at the same
        place, or any in a small oneOf."""
        if alt.origin is None:
            return False
        theirs, taken = alt.origin
        texts = self.comparison.texts
        equal = next(
            (i for i, b in enumerate(theirs) if texts.key(b)[0] == texts.key(branch)[0]), None
        )
        c = self.comparison
        rest = range(len(theirs)) if len(theirs) <= _FEW else ()
        for index in dict.fromkeys(i for i in (equal, other, *rest) if i is not None):
            if index != taken and index < len(theirs):
                backwards = _Comparison(c.writer, c.reader, c.budget, c.texts)
                if backwards.run(theirs[index], branch, "#", depth + 1, 0) is None:
                    return True
        return False


def _may_read(branch: object, w: Schema) -> bool:
    """False when `branch` plainly cannot read all of `w` (a quick filter)."""
    if not isinstance(branch, dict) or "$ref" in branch:
        return branch is not False
    kinds, mine = _kinds(w), _kinds(branch)
    if not all(k in mine or (k == "integer" and "number" in mine) for k in kinds):
        return False
    allowed, values = _listed(branch), _finite(w, kinds)
    return allowed is None or values is None or _texts(values) <= _texts(allowed)


def _disjoint(w: Schema, branch: object) -> bool:
    """True when no value matches both `w` and `branch` (by kinds, listed values, or a
    property one requires that the other forbids or values apart)."""
    if branch is False:
        return True
    if not isinstance(branch, dict) or "$ref" in branch or "$ref" in w:
        return False
    mine, theirs = _kinds(branch), _kinds(w)
    if not _meet(mine, theirs):
        return True
    values, allowed = _finite(w, theirs), _finite(branch, mine)
    if values is not None and allowed is not None and not _texts(values) & _texts(allowed):
        return True
    if not (mine <= {"object"} or theirs <= {"object"}):
        return False
    return _apart(w, branch) or _apart(branch, w)


def _apart(a: Schema, b: Schema) -> bool:
    """True if an object `a` accepts cannot match `b`: a property `a` requires is one
    `b` forbids, or one whose values differ."""
    required = a.get("required")
    mine, theirs = a.get("properties"), b.get("properties")
    mine = mine if isinstance(mine, dict) else {}
    theirs = theirs if isinstance(theirs, dict) else {}
    closed = b.get("additionalProperties") is False and "patternProperties" not in b
    for name in required if isinstance(required, list) else []:
        other = theirs.get(name, _MISSING) if isinstance(name, str) else _EMPTY
        if other is False or (other is _MISSING and closed):
            return True
        own = mine.get(name) if isinstance(name, str) else None
        if isinstance(own, dict) and other is not _MISSING and _disjoint(own, other):
            return True
    return False
