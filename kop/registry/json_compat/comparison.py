"""The comparison: reader against writer over $refs, alternatives and unions, with a
memo of pairs under way so recursive schemas end."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from kop.registry.json_compat.alternatives import Alt, Expander, deref
from kop.registry.json_compat.budget import MAX_DEPTH, Abort, Budget
from kop.registry.json_compat.documents import Doc, External, Target, Unresolved
from kop.registry.json_compat.keywords import EMPTY, FEW, MISSING, NOTHING, UNMODELLED, Key, Schema
from kop.registry.json_compat.rules import RULES, Scope, contextual_rule
from kop.registry.json_compat.values import (
    Texts,
    accepts_nothing,
    finite,
    kinds_of,
    listed_values,
    meet,
    rebase,
    show,
    texts_of,
    trivial,
    unchecked,
)


class _Sameness:
    """Which schemas mean the same on both sides, $ref followed."""

    def __init__(self, reader: Doc, writer: Doc, budget: Budget, texts: Texts) -> None:
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
        if isinstance(mine, External) and mine == theirs:
            return ()
        if not (isinstance(mine, Target) and isinstance(theirs, Target)):
            return None
        text, inner = self.texts.key(mine.node)
        if text is None or text != self.texts.key(theirs.node)[0]:
            return None
        return inner

    def unmodelled_in(self, node: Schema, doc: Doc) -> frozenset[str]:
        """The unmodelled keywords `node` holds, itself or through its $ref, allOf,
        anyOf and oneOf (a bounded look)."""
        hit = self.unmodelled.get((id(node), id(doc)))
        if hit is None:
            found: set[str] = set()
            todo: list[object] = [node]
            for _ in range(MAX_DEPTH):
                if not todo:
                    break
                current = deref(todo.pop(), doc)
                if isinstance(current, dict):
                    found.update(k for k in current if k in UNMODELLED)
                    for key in ("allOf", "anyOf", "oneOf"):
                        branches = current.get(key)
                        todo.extend(branches if isinstance(branches, list) else [])
            hit = self.unmodelled[(id(node), id(doc))] = (node, frozenset(found))
        return hit[1]


class Comparison:
    """One direction: does the reader accept everything the writer accepts. Pairs of
    schemas (reader node, writer node) are compared once: the ones under comparison are
    kept with the data level they started at, the ones proved in a log (to forget what a
    failed attempt proved), the ones that failed with why; the properties and items
    met outside an attempt are put off, and compared from the top of the stack."""

    def __init__(self, reader: Doc, writer: Doc, budget: Budget, texts: Texts) -> None:
        self.reader, self.writer, self.budget, self.texts = reader, writer, budget, texts
        self.keep: list[object] = []  # the writer's nodes made here: ids key the memo
        self.expander = Expander(writer, self.keep, budget)
        self.sameness = _Sameness(reader, writer, budget, texts)
        self.parts = _Parts(self)
        self.active: dict[Key, int] = {}
        self.proved: set[Key] = set()
        self.proved_log: list[Key] = []
        self.failed: dict[Key, tuple[str, str]] = {}
        self.attempts = 0
        self.queued: set[Key] = set()
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
        if depth > MAX_DEPTH:
            raise Abort(f"{path}: the schemas are nested too deeply to compare")
        if r is True or w is False or self.same(r, w):
            return None
        r = NOTHING if r is False else r
        w = EMPTY if w is True else w
        if not isinstance(r, dict) or not isinstance(w, dict):
            return f"{path}: kop does not check schemas that are neither an object nor a boolean"
        if trivial(r):
            return None
        known = self.sameness.unmodelled_in
        extra = known(w, self.writer) - known(r, self.reader)
        if whole and extra:
            return unchecked(path, sorted(extra)[0])
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
            return rebase(self.failed[key], path)
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
            return rebase(self.failed[key], path)
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

    def __init__(self, comparison: Comparison) -> None:
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
        self, part: str, r: Schema, alt: Alt, path: str, depth: int, level: int
    ) -> str | None:
        if part == "$ref":
            return self._ref(r["$ref"], alt, path, depth, level)
        if part == "allOf":
            branches = r["allOf"]
            if not isinstance(branches, list):
                return unchecked(path, "allOf")
            for index, branch in enumerate(branches):
                where = f"{path}/allOf/{index}"
                if reason := self.comparison.read(branch, alt.node, where, depth + 1, level):
                    return reason
            return None
        if part in ("anyOf", "oneOf"):
            return self.unions.read(part, r[part], alt, f"{path}/{part}", depth, level)
        return self._keywords(r, alt, path, depth, level)

    def _ref(self, ref: object, alt: Alt, path: str, depth: int, level: int) -> str | None:
        c = self.comparison
        target = c.reader.resolve(ref)
        if isinstance(target, External):
            if alt.opaque and c.writer.resolve(alt.node.get("$ref")) == target:
                return None
            return f"{path}: kop does not follow $ref {show(ref)} to another document"
        if isinstance(target, Unresolved):
            return f"{path}: {target.reason}"
        return c.read(target.node, alt.node, target.pointer, depth + 1, level)

    def _keywords(self, r: Schema, alt: Alt, path: str, depth: int, level: int) -> str | None:
        w = EMPTY if alt.opaque else alt.node
        if accepts_nothing(w):
            return None
        if reason := contextual_rule(r, w, path):
            return reason
        scope, kinds = Scope(self.comparison, depth, level), kinds_of(w)
        for rule in RULES:
            if reason := rule(scope, r, w, kinds, path):
                return reason
        return None


class _Unions:
    """The reader's anyOf and oneOf: some branch reads each writer's alternative; for
    oneOf, no other branch may match that alternative's data too."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self.index: dict[int, tuple[object, dict[str | None, int]]] = {}

    def read(
        self, kind: str, branches: object, alt: Alt, path: str, depth: int, level: int
    ) -> str | None:
        """Some branch reads the alternative; failing that, each of its types alone
        (a nullable string is read by anyOf [null, string])."""
        if not isinstance(branches, list):
            return unchecked(path, kind)
        if not alt.opaque and accepts_nothing(alt.node):
            return None
        reason = self._read(kind, branches, alt, path, depth, level)
        kinds = kinds_of(alt.node)
        if reason is None or alt.opaque or len(kinds) < 2:
            return reason
        for each in sorted(kinds):
            node = {**alt.node, "type": each}
            self.comparison.keep.append(node)
            if self._read(kind, branches, Alt(node, origin=alt.origin), path, depth, level):
                return reason
        return None

    def _read(
        self, kind: str, branches: list[object], alt: Alt, path: str, depth: int, level: int
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

    def _candidates(self, branches: list[object], alt: Alt) -> Iterator[int]:
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
        self, branches: list[object], index: int, alt: Alt, path: str, depth: int
    ) -> str | None:
        w = EMPTY if alt.opaque else alt.node
        for other, branch in enumerate(branches):
            if other == index or _disjoint(w, deref(branch, self.comparison.reader)):
                continue
            if self._narrowed(branch, other, alt, depth):
                continue
            return (
                f"{path}: data the writer accepts may match branches {index} and {other} of the "
                "reader's oneOf, which accepts one match only"
            )
        return None

    def _narrowed(self, branch: object, other: int, alt: Alt, depth: int) -> bool:
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
        rest = range(len(theirs)) if len(theirs) <= FEW else ()
        for index in dict.fromkeys(i for i in (equal, other, *rest) if i is not None):
            if index != taken and index < len(theirs):
                backwards = Comparison(c.writer, c.reader, c.budget, c.texts)
                if backwards.run(theirs[index], branch, "#", depth + 1, 0) is None:
                    return True
        return False


def _may_read(branch: object, w: Schema) -> bool:
    """False when `branch` plainly cannot read all of `w` (a quick filter)."""
    if not isinstance(branch, dict) or "$ref" in branch:
        return branch is not False
    kinds, mine = kinds_of(w), kinds_of(branch)
    if not all(k in mine or (k == "integer" and "number" in mine) for k in kinds):
        return False
    allowed, values = listed_values(branch), finite(w, kinds)
    return allowed is None or values is None or texts_of(values) <= texts_of(allowed)


def _disjoint(w: Schema, branch: object) -> bool:
    """True when no value matches both `w` and `branch` (by kinds, listed values, or a
    property one requires that the other forbids or values apart)."""
    if branch is False:
        return True
    if not isinstance(branch, dict) or "$ref" in branch or "$ref" in w:
        return False
    mine, theirs = kinds_of(branch), kinds_of(w)
    if not meet(mine, theirs):
        return True
    values, allowed = finite(w, theirs), finite(branch, mine)
    if values is not None and allowed is not None and not texts_of(values) & texts_of(allowed):
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
        other = theirs.get(name, MISSING) if isinstance(name, str) else EMPTY
        if other is False or (other is MISSING and closed):
            return True
        own = mine.get(name) if isinstance(name, str) else None
        if isinstance(own, dict) and other is not MISSING and _disjoint(own, other):
            return True
    return False
