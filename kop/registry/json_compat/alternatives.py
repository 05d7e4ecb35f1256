"""The writer's schema as alternatives without $ref, anyOf, oneOf or allOf, each accepting
at least what its part of the writer does: what the keyword rules compare."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from kop.registry.json_compat.budget import MAX_ALTERNATIVES, MAX_DEPTH, Abort, Budget
from kop.registry.json_compat.documents import Doc, Target
from kop.registry.json_compat.keywords import EMPTY, GROUPS, MISSING, Origin, Schema
from kop.registry.json_compat.values import dump, is_number, meet, texts_of, trivial, type_names


@dataclass(frozen=True, slots=True)
class Alt:
    """One part of what the writer accepts, without $ref, anyOf, oneOf or allOf.
    `opaque`: a $ref kop cannot follow, known only by that $ref."""

    node: Schema
    opaque: bool = False
    origin: Origin | None = None


def _without(node: Schema, key: str) -> Schema:
    return {k: v for k, v in node.items() if k != key}


_LARGEST: Final = frozenset({"minLength", "minItems", "minProperties", "minimum"})
_SMALLEST: Final = frozenset({"maxLength", "maxItems", "maxProperties", "maximum"})
_BOTH_READ: Final = frozenset({"items", "additionalProperties"})


def _conjunction(key: str, mine: object, value: object) -> object:
    """The value of `key` in a schema that accepts what a schema with `mine` and one
    with `value` both accept, or more (`value`, when kop cannot tell)."""
    if is_number(mine) and is_number(value):
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
    a, b = type_names(mine), type_names(value)
    if key == "type" and a is not None and b is not None:
        return sorted(meet(a, b))
    if key == "enum" and isinstance(mine, list) and isinstance(value, list):
        return [v for v in value if dump(v) in texts_of(mine)]
    if key == "uniqueItems" and isinstance(mine, bool) and isinstance(value, bool):
        return mine or value
    if key in _BOTH_READ and isinstance(mine, dict | bool) and isinstance(value, dict | bool):
        if mine is False or value is True or dump(mine) == dump(value):
            return mine
        return value if value is False or mine is True else {"allOf": [mine, value]}
    if key == "properties" and isinstance(mine, dict) and isinstance(value, dict):
        both = {p: {"allOf": [mine[p], s]} if p in mine else s for p, s in value.items()}
        return {**mine, **both}
    if key == "allOf" and isinstance(mine, list) and isinstance(value, list):
        # once each: a self-referencing allOf would double the list at every step
        return list({dump(branch): branch for branch in [*mine, *value]}.values())
    return value


def _merge(base: Schema, extra: Schema) -> Schema:
    """A schema that accepts at least what both accept (exactly that, where it can)."""
    out = dict(base)
    for key, value in extra.items():
        mine = out.get(key, MISSING)
        if mine is MISSING:
            out[key] = value
        elif key in ("anyOf", "oneOf"):
            kept = out.get("allOf")
            out["allOf"] = [*(kept if isinstance(kept, list) else []), {key: value}]
        elif key == "const" and dump(mine) != dump(value):
            out["enum"] = []  # two consts: nothing
        else:
            out[key] = _conjunction(key, mine, value)
    for group in GROUPS:
        if group[0] in ("minimum", "maximum") and not any(
            isinstance(s.get(group[1]), bool) for s in (base, extra)
        ):
            continue  # independent bounds, unless draft-04's boolean exclusive* reads both
        if any(k in extra for k in group) and any(k in base and k not in extra for k in group):
            for k in group:
                out.pop(k, None)
    return out


def deref(node: object, doc: Doc) -> object:
    """`node`, or what its $ref leads to (its siblings dropped: it accepts no less)."""
    for _ in range(MAX_DEPTH):
        if not (isinstance(node, dict) and "$ref" in node):
            return node
        target = doc.resolve(node["$ref"])
        if not isinstance(target, Target):
            return node
        node = target.node
    return node


class Expander:
    """The writer's schema as a list of alternatives that together accept at least what
    it accepts: $ref followed, anyOf and oneOf split, allOf merged."""

    def __init__(self, doc: Doc, keep: list[object], budget: Budget) -> None:
        self.doc = doc
        self.keep = keep  # merged schemas outlive the comparison: ids key its memo
        self.budget = budget

    def alternatives(self, writer: Schema, path: str) -> list[Alt]:
        done: list[Alt] = []
        todo: list[tuple[object, Origin | None, int]] = [(writer, None, 0)]
        while todo:
            node, origin, steps = todo.pop()
            self.budget.spend(path)
            if len(done) + len(todo) > MAX_ALTERNATIVES:
                raise Abort(f"{path}: the schemas are too large to compare")
            if steps > MAX_DEPTH:
                raise Abort(f"{path}: the writer's $ref, anyOf, oneOf and allOf nest too deeply")
            if node is False:
                continue
            step = self._step(node if isinstance(node, dict) else EMPTY, origin)
            if isinstance(step, Alt):
                done.append(step)
            else:
                todo.extend((n, o, steps + 1) for n, o in step)
        return done

    def _step(
        self, node: Schema, origin: Origin | None
    ) -> Alt | list[tuple[object, Origin | None]]:
        if "$ref" in node:
            target = self.doc.resolve(node["$ref"])
            if isinstance(target, Target):
                return [(target.node, origin)]
            return Alt(node, opaque=True, origin=origin)
        for key in ("anyOf", "oneOf"):
            if key in node:
                return self._split(node, key, origin)
        if "allOf" in node:
            merged: Schema | None = _without(node, "allOf")
            branches = node["allOf"]
            for branch in branches if isinstance(branches, list) else []:
                merged = self._conjoin(merged, branch) if merged is not None else None
            return [] if merged is None else [(merged, origin)]
        return Alt(node, origin=origin)

    def _split(
        self, node: Schema, key: str, origin: Origin | None
    ) -> list[tuple[object, Origin | None]]:
        rest, branches = _without(node, key), node[key]
        if not isinstance(branches, list):
            return [(rest, origin)]
        out: list[tuple[object, Origin | None]] = []
        for index, branch in enumerate(branches):
            merged = self._conjoin(rest, branch)
            if merged is not None:
                taken = (branches, index) if origin is None and key == "oneOf" else origin
                out.append((merged, taken))
        return out

    def _conjoin(self, base: Schema, branch: object) -> Schema | None:
        """What `base` and `branch` both accept, or more; None: nothing."""
        extra = deref(branch, self.doc)
        if extra is False:
            return None
        if not isinstance(extra, dict):
            return base
        if "$ref" in extra:  # a $ref kop cannot follow: kept alone, or left out
            return extra if trivial(base) else base
        merged = _merge(base, extra)
        branches = merged.get("allOf")
        # a merge costs what it carries: hostile nesting grows merges, not just their number
        self.budget.spend("#", 1 + (len(branches) if isinstance(branches, list) else 0))
        self.keep.append(merged)
        return merged
