"""A schema document's $refs, followed inside the document by JSON pointer only: a
reference kop cannot follow is known by its text alone."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urldefrag, urljoin

from kop.registry.json_compat.keywords import ONE_SCHEMA, SCHEMA_LIST, SCHEMA_MAP, Schema
from kop.registry.json_compat.values import dump, show


@dataclass(frozen=True, slots=True)
class Target:
    node: object
    pointer: str


@dataclass(frozen=True, slots=True)
class External:
    uri: str  # absolute when the document has a base URI


@dataclass(frozen=True, slots=True)
class Unresolved:
    reason: str


_Resolved = Target | External | Unresolved


def _subschemas(node: Schema) -> Iterator[object]:
    """The schemas directly inside `node`, by the applicator keywords of every draft."""
    for key, value in node.items():
        if key in SCHEMA_LIST and isinstance(value, list):
            yield from value
        elif key in SCHEMA_MAP and isinstance(value, dict):
            yield from value.values()
        elif key in ONE_SCHEMA and isinstance(value, dict):
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
        return dump(declared)
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
        if key in SCHEMA_LIST and isinstance(value, list):
            out[key] = [_strip(v, keyword) for v in value]
        elif key in SCHEMA_MAP and isinstance(value, dict):
            out[key] = {name: _strip(v, keyword) for name, v in value.items()}
        else:
            out[key] = _strip(value, keyword) if key in ONE_SCHEMA else value
    return out


class Doc:
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
            return Unresolved("kop does not follow a $ref that is not a string")
        found = self._resolved.get(ref)
        if found is None:
            found = self._resolved[ref] = self._resolve(ref)
        return found

    def _resolve(self, ref: str) -> _Resolved:
        if self.embeds_id:
            return Unresolved("kop does not follow $ref in a schema that embeds another $id")
        try:
            document, fragment = urldefrag(urljoin(self.base, ref) if self.base else ref)
        except ValueError:
            return Unresolved(f"kop cannot resolve $ref {show(ref)}")
        if document and document != self.base:
            return External(document + "#" + fragment)
        return self._pointer(ref, fragment)

    def _pointer(self, ref: str, fragment: str) -> _Resolved:
        if fragment and not fragment.startswith("/"):
            return Unresolved(f"kop follows $ref by JSON pointer only, not {show(ref)}")
        node = self.root
        for token in unquote(fragment).split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return Unresolved(f"$ref {show(ref)} leads nowhere in its document")
        return Target(node, "#" + fragment)
