"""A JSON Schema as the Pulsar topic's schema, and back.

Pulsar's JSON schema type holds an Avro schema: the JSON encoding of an Avro record is
what Pulsar's JSON producers write and its JSON consumers read, and Pulsar checks a
JSON topic's evolutions with Avro's rules. A subject `<topic>-value` in JSON Schema is
the topic's schema (as an Avro one is), so kop stores it in Pulsar as the Avro record
that reads the same JSON documents, with the JSON Schema itself kept on that record
as the property `kop.jsonSchema`:

- the property makes the definition the JSON Schema's alone, so two JSON Schemas that
  read alike in Avro (they differ in a `maxLength`, say) are two versions, as they are
  to Confluent's registry, and kop reads each version's JSON Schema back exactly;
- a version a Pulsar producer added has no such property, and is shown as the JSON
  Schema its Avro record reads (`json_schema_of`).

The mapping (docs/schema-registry.md): an object with `properties` is a record (named
by its `title`, else by its property's or definition's name), a property not in
`required` is a union with null (default null), string/integer/number/boolean/null
are string/long/double/boolean/null, an array is an array of its `items`, an object
with only `additionalProperties` a map, `enum` of strings a string, `oneOf`/`anyOf`
and type lists a union, local `$ref`s the definitions they name. Validation keywords
(`minLength`, `pattern`, ...) have no Avro form and are kop's alone to check. What has
no Avro form at all (a value of any type, a property name Avro does not allow) is
refused (NotAvro): such a schema cannot be a Pulsar topic's.
"""

from __future__ import annotations

import json
import re
from typing import Any

JSON_SCHEMA_PROPERTY = "kop.jsonSchema"
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PRIMITIVES = {"string": "string", "integer": "long", "number": "double", "boolean": "boolean"}
_PRIMITIVES["null"] = "null"
_MAX_DEPTH = 64


class NotAvro(ValueError):
    """A JSON Schema with no Avro form (why, in one line)."""


def avro_of(document: Any, text: str) -> str:
    """The Avro record (as JSON text) Pulsar keeps for the JSON Schema `document` whose
    canonical text is `text`; NotAvro if it has none."""
    if not isinstance(document, dict):
        raise NotAvro("a topic's JSON Schema must describe an object")
    record = _Converter(document).convert(document, "Value", "#", 0)
    if not isinstance(record, dict) or record.get("type") != "record":
        raise NotAvro("a topic's JSON Schema must describe an object with properties")
    record[JSON_SCHEMA_PROPERTY] = text
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


class _Converter:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.named: set[str] = set()  # record names given so far
        self.refs: dict[str, str] = {}  # pointer -> record name (recursion)

    def convert(self, node: Any, name: str, where: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise NotAvro(f"{where}: nested too deeply")
        if not isinstance(node, dict):
            raise NotAvro(f"{where}: a value of any type has no Avro form")
        if "$ref" in node:
            return self._ref(node["$ref"], where, depth)
        branches = node.get("oneOf", node.get("anyOf"))
        if branches is not None:
            return self._union(branches, name, where, depth)
        if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
            return self.convert(node["allOf"][0], name, f"{where}/allOf/0", depth + 1)
        kind = node.get("type", _implied_type(node))
        if isinstance(kind, list):
            one = [{**node, "type": k} for k in kind]
            return self._union(one, name, where, depth)
        if kind == "object":
            return self.record(node, name, where, depth)
        if kind == "array":
            if not isinstance(node.get("items"), dict):
                raise NotAvro(f"{where}: an array needs one schema for its items")
            items = self.convert(node["items"], name, f"{where}/items", depth + 1)
            return {"type": "array", "items": items}
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        raise NotAvro(f"{where}: a value of any type has no Avro form")

    def record(self, node: dict[str, Any], name: str, where: str, depth: int) -> Any:
        properties = node.get("properties")
        if not isinstance(properties, dict):
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                values = self.convert(extra, name, f"{where}/additionalProperties", depth + 1)
                return {"type": "map", "values": values}
            raise NotAvro(f"{where}: an object needs properties or a schema for its values")
        title = node.get("title")
        record_name = self._name(title if isinstance(title, str) and _valid(title) else name)
        self.refs.setdefault(where, record_name)
        listed = node.get("required")
        required: list[Any] = listed if isinstance(listed, list) else []
        fields = [
            self._field(key, value, key in required, f"{where}/properties/{key}", depth)
            for key, value in properties.items()
        ]
        return {"type": "record", "name": record_name, "fields": fields}

    def _field(self, key: str, node: Any, required: bool, where: str, depth: int) -> Any:
        if not _valid(key):
            raise NotAvro(f"{where}: {key!r} is no Avro field name")
        kind = self.convert(node, key, where, depth + 1)
        if required:
            return {"name": key, "type": kind}
        branches = kind if isinstance(kind, list) else [kind]
        others = [b for b in branches if b != "null"]
        return {"name": key, "type": ["null", *others], "default": None}

    def _union(self, branches: Any, name: str, where: str, depth: int) -> Any:
        if not isinstance(branches, list) or not branches:
            raise NotAvro(f"{where}: a union needs branches")
        out: list[Any] = []
        for i, branch in enumerate(branches):
            kind = self.convert(branch, name, f"{where}/{i}", depth + 1)
            for one in kind if isinstance(kind, list) else [kind]:
                if one not in out:
                    out.append(one)
        kinds = [_kind(one) for one in out]
        if len(set(kinds)) != len(kinds):
            raise NotAvro(f"{where}: Avro unions hold one branch of each kind")
        return out[0] if len(out) == 1 else out

    def _ref(self, ref: Any, where: str, depth: int) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise NotAvro(f"{where}: kop follows only references into the same schema")
        pointer = ref if ref != "#" else "#"
        if pointer in self.refs:
            return self.refs[pointer]  # a record being written: its name
        node = _resolve(self.root, pointer)
        name = pointer.rsplit("/", 1)[-1] if pointer != "#" else "Value"
        return self.convert(node, name if _valid(name) else "Value", pointer, depth + 1)

    def _name(self, wanted: str) -> str:
        name, n = wanted, 1
        while name in self.named:
            n += 1
            name = f"{wanted}{n}"
        self.named.add(name)
        return name


def _implied_type(node: dict[str, Any]) -> str | None:
    """The type a schema without `type` still names: properties make an object, a
    string enum or const a string."""
    if "properties" in node:
        return "object"
    values = node["enum"] if isinstance(node.get("enum"), list) else [node.get("const")]
    if "enum" in node or "const" in node:
        kinds = {_PY_TYPES.get(type(v)) for v in values}
        return kinds.pop() if len(kinds) == 1 else None
    return None


_PY_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _kind(avro: Any) -> str:
    """What an Avro union tells its branches apart by: a named type's name, else its type."""
    if isinstance(avro, dict):
        return str(avro.get("name") if avro.get("type") == "record" else avro.get("type"))
    return str(avro)


def _valid(name: str) -> bool:
    return _AVRO_NAME.fullmatch(name) is not None


def _resolve(root: Any, pointer: str) -> Any:
    node = root
    for part in pointer[1:].lstrip("/").split("/") if pointer != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise NotAvro(f"{pointer}: the reference names nothing in the schema")
        node = node[part]
    return node


# -- back: the JSON Schema an Avro record reads -------------------------------------


def json_schema_of(avro: Any) -> dict[str, Any]:
    """The JSON Schema of a Pulsar JSON (or Avro) version's Avro definition (as parsed
    JSON): the one kop stored on it, else the documents its record reads."""
    if isinstance(avro, dict) and isinstance(avro.get(JSON_SCHEMA_PROPERTY), str):
        found = json.loads(avro[JSON_SCHEMA_PROPERTY])
        if isinstance(found, dict):
            return found
    back = _Back(_short(avro.get("name", "Value")) if isinstance(avro, dict) else "")
    out = back.schema(avro, root=True)
    if back.named:
        out["definitions"] = back.named
    return out


_JSON_OF_AVRO = {
    "null": "null", "boolean": "boolean", "int": "integer", "long": "integer",
    "float": "number", "double": "number", "string": "string", "bytes": "string",
}  # fmt: skip


class _Back:
    """Avro to JSON Schema: named types go to `definitions` and are referred to by
    `$ref` (the root record by `#`), so recursive records convert too."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.named: dict[str, Any] = {}

    def schema(self, avro: Any, root: bool = False) -> dict[str, Any]:
        if isinstance(avro, str):
            if avro in _JSON_OF_AVRO:
                return {"type": _JSON_OF_AVRO[avro]}
            short = _short(avro)
            return {"$ref": "#" if short == self.root else f"#/definitions/{short}"}
        if isinstance(avro, list):
            return {"oneOf": [self.schema(branch) for branch in avro]}
        if not isinstance(avro, dict):
            return {}
        kind = avro.get("type")
        if kind in ("record", "error"):
            name = _short(avro.get("name", "Value"))
            body = self._object(avro, name)
            if root:
                return body
            self.named[name] = body
            return {"$ref": f"#/definitions/{name}"}
        if kind == "enum":
            body = {"type": "string", "enum": list(avro.get("symbols", []))}
            self.named[_short(avro.get("name", "Enum"))] = body
            return body
        if kind == "array":
            return {"type": "array", "items": self.schema(avro.get("items"))}
        if kind == "map":
            return {"type": "object", "additionalProperties": self.schema(avro.get("values"))}
        if kind == "fixed":
            return {"type": "string"}
        return self.schema(kind)  # {"type": "long", "logicalType": ...}

    def _object(self, avro: dict[str, Any], name: str) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required = []
        for f in avro.get("fields", []):
            properties[f["name"]] = self.schema(f["type"])
            nullable = isinstance(f["type"], list) and "null" in f["type"]
            if not nullable and "default" not in f:
                required.append(f["name"])
        body: dict[str, Any] = {"title": name, "type": "object", "properties": properties}
        if required:
            body["required"] = required
        return body


def _short(name: object) -> str:
    return str(name).rsplit(".", 1)[-1]
