"""A topic's JSON Schema as the Avro record Pulsar keeps (kop/registry/json_avro.py):
the mapping, what has no Avro form, the JSON Schema read back exactly, and the JSON
Schema of a Pulsar producer's record accepting the documents that record writes."""

from __future__ import annotations

import json
from typing import Any

import avro.schema
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.registry.json_avro import JSON_SCHEMA_PROPERTY, NotAvro, avro_of, json_schema_of


def converted(document: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(avro_of(document, json.dumps(document)))
    avro.schema.parse(json.dumps(record))  # Avro's own parser takes it
    return record


def field_types(document: dict[str, Any]) -> dict[str, Any]:
    return {f["name"]: f["type"] for f in converted(document)["fields"]}


def obj(required: list[str] | None = None, **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or []}


@pytest.mark.parametrize(
    ("schema", "avro_type"),
    [
        ({"type": "string", "maxLength": 3}, "string"),
        ({"type": "integer"}, "long"),
        ({"type": "number"}, "double"),
        ({"type": "boolean"}, "boolean"),
        ({"type": "array", "items": {"type": "integer"}}, {"type": "array", "items": "long"}),
        ({"type": "object", "additionalProperties": {"type": "number"}},
         {"type": "map", "values": "double"}),
        ({"enum": ["a", "b"]}, "string"),
        ({"const": 3}, "long"),
        ({"type": ["string", "integer"]}, ["string", "long"]),
        ({"oneOf": [{"type": "string"}, {"type": "number"}]}, ["string", "double"]),
        ({"allOf": [{"type": "boolean"}]}, "boolean"),
    ],
)  # fmt: skip
def test_a_required_property_maps_to_its_avro_type(schema: dict[str, Any], avro_type: Any) -> None:
    assert field_types(obj(["x"], x=schema))["x"] == avro_type


def test_an_optional_property_is_a_union_with_null_first_and_a_null_default() -> None:
    record = converted(obj(x={"type": ["string", "null"]}, y={"type": "integer"}))
    assert record["fields"] == [
        {"name": "x", "type": ["null", "string"], "default": None},
        {"name": "y", "type": ["null", "long"], "default": None},
    ]


def test_records_are_named_by_title_else_by_property_or_definition() -> None:
    document = {
        "title": "Order",
        **obj(["to"], to={"type": "object", "properties": {"city": {"type": "string"}}},
              by={"$ref": "#/definitions/Person"}),
        "definitions": {"Person": obj(["name"], name={"type": "string"})},
    }  # fmt: skip
    record = converted(document)
    assert record["name"] == "Order"
    types = {f["name"]: f["type"] for f in record["fields"]}
    assert types["to"]["name"] == "to"
    assert types["by"][1]["name"] == "Person"


def test_recursion_through_refs_names_the_record_being_written() -> None:
    tree = {"title": "Node", **obj(["value"], value={"type": "integer"},
                                   children={"type": "array", "items": {"$ref": "#"}})}  # fmt: skip
    types = field_types(tree)
    assert types["children"] == ["null", {"type": "array", "items": "Node"}]


def test_the_json_schema_rides_on_the_record_and_comes_back_exactly() -> None:
    document = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "T",
                **obj(["a"], a={"type": "string", "pattern": "^x"})}  # fmt: skip
    text = json.dumps(document, separators=(",", ":"))
    record = json.loads(avro_of(document, text))
    assert record[JSON_SCHEMA_PROPERTY] == text
    assert json_schema_of(record) == document


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ({"type": "string"}, "object with properties"),
        ({"type": "object"}, "needs properties"),
        (obj(x={}), "any type"),
        (obj(x=True), "any type"),
        (obj(**{"first-name": {"type": "string"}}), "no Avro field name"),
        (obj(x={"type": "array"}), "items"),
        (obj(x={"type": ["string", "integer"], "oneOf": []}), "branches"),
        (obj(x={"oneOf": [{"type": "array", "items": {"type": "string"}},
                          {"type": "array", "items": {"type": "integer"}}]}),
         "one branch of each kind"),
        (obj(x={"$ref": "https://example.com/s.json"}), "same schema"),
        (obj(x={"$ref": "#/definitions/missing"}), "names nothing"),
    ],
)  # fmt: skip
def test_what_has_no_avro_form_is_refused_with_why(document: Any, why: str) -> None:
    with pytest.raises(NotAvro) as refused:
        avro_of(document, json.dumps(document))
    assert why in str(refused.value)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    document: dict[str, Any] = {"type": "integer"}
    for _ in range(500):
        document = obj(["x"], x=document)
    with pytest.raises(NotAvro, match="too deeply"):
        avro_of(document, "{}")


# -- a Pulsar producer's record, and the JSON Schema kop shows for it ----------------

PRIMITIVES = {
    "string": st.text(max_size=5),
    "long": st.integers(-(2**63), 2**63 - 1),
    "int": st.integers(-(2**31), 2**31 - 1),
    "double": st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
}
RECORD = {
    "type": "record", "name": "Reading", "namespace": "com.example",
    "fields": [
        {"name": "sensor", "type": "string"},
        {"name": "value", "type": ["null", "double"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "next", "type": ["null", "Reading"], "default": None},
    ],
}  # fmt: skip


def documents(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """What a Pulsar JSON producer writes for RECORD: every field, nulls included."""
    nxt = (
        st.none() if depth == 0 else st.one_of(st.none(), st.deferred(lambda: documents(depth - 1)))
    )
    return st.fixed_dictionaries(
        {
            "sensor": PRIMITIVES["string"],
            "value": st.one_of(st.none(), PRIMITIVES["double"]),
            "tags": st.lists(PRIMITIVES["string"], max_size=3),
            "attrs": st.dictionaries(st.text(max_size=3), PRIMITIVES["long"], max_size=3),
            "kind": st.sampled_from(["A", "B"]),
            "next": nxt,
        }
    )  # fmt: skip


@given(documents())
def test_the_shown_json_schema_accepts_what_the_pulsar_record_writes(doc: dict[str, Any]) -> None:
    shown = json_schema_of(avro.schema.parse(json.dumps(RECORD)).to_json())
    jsonschema.Draft7Validator.check_schema(shown)
    jsonschema.validate(doc, shown)


def test_the_shown_json_schema_requires_what_has_no_default_and_is_not_nullable() -> None:
    shown = json_schema_of(RECORD)
    assert shown["title"] == "Reading"
    assert shown["required"] == ["sensor", "tags", "attrs", "kind"]
    assert shown["properties"]["next"] == {"oneOf": [{"type": "null"}, {"$ref": "#"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sensor": 1, "tags": [], "attrs": {}, "kind": "A"}, shown)
