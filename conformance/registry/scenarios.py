"""The scenarios, each a sequence of requests whose answers are compared step by step.
Subject names are the scenario's own (prefixed alike on both targets): `<name>-value`
ones are Pulsar topics' schemas on kop, the others kop's alone."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from urllib.parse import quote

from google.protobuf.descriptor_pb2 import FieldDescriptorProto, FileDescriptorProto

from conformance.registry.client import Registry

Scenario = Callable[[Registry], None]
SCENARIOS: dict[str, Scenario] = {}


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__.replace("_", "-")] = fn
    return fn


def record(*fields: tuple[str, str, object]) -> str:
    return json.dumps(
        {
            "type": "record", "name": "Reading", "namespace": "conf",
            "fields": [
                {"name": n, "type": t, **({} if d is None else {"default": d})}
                for n, t, d in fields
            ],
        }
    )  # fmt: skip


V1 = record(("sensor", "string", None))
V2 = record(("sensor", "string", None), ("value", "int", 0))  # follows V1 both ways
BAD = record(("sensor", "int", None))  # reads nothing V1 wrote, nor V1 it


def json_schema(*required: str, **properties: object) -> str:
    return json.dumps(
        {
            "title": "Reading", "type": "object", "properties": properties,
            "required": list(required), "additionalProperties": False,
        }
    )  # fmt: skip


J1 = json_schema("sensor", sensor={"type": "string"})
# an optional property added to a closed content model: BACKWARD compatible
J2 = json_schema("sensor", sensor={"type": "string"}, value={"type": "integer"})
# the sensor's length narrowed: V1's documents may not all be read
J_NARROWED = json_schema("sensor", sensor={"type": "string", "maxLength": 4})


def protobuf(note_type: int) -> str:
    """A Protobuf schema as confluent-kafka's serializers send it: the base64 of its
    FileDescriptorProto (message Reading {string sensor = 1; <note_type> note = 2;})."""
    file = FileDescriptorProto(name="conf/reading.proto", package="conf", syntax="proto3")
    reading = file.message_type.add(name="Reading")
    label = FieldDescriptorProto.LABEL_OPTIONAL
    reading.field.add(name="sensor", number=1, type=FieldDescriptorProto.TYPE_STRING, label=label)
    reading.field.add(name="note", number=2, type=note_type, label=label)
    return base64.standard_b64encode(file.SerializeToString()).decode()


P1 = protobuf(FieldDescriptorProto.TYPE_STRING)
P_BYTES = protobuf(FieldDescriptorProto.TYPE_BYTES)  # one wire group with string
P_NUMBER = protobuf(FieldDescriptorProto.TYPE_INT64)  # reads no string


def _s(r: Registry, name: str) -> str:
    return quote(r.subject(name), safe="")


def register(r: Registry, label: str, name: str, schema: str) -> None:
    r.call(label, "POST", f"/subjects/{_s(r, name)}/versions", {"schema": schema})


@scenario
def register_and_read(r: Registry) -> None:
    register(r, "register", "t-value", V1)
    register(r, "register again", "t-value", V1)
    r.call("versions", "GET", f"/subjects/{_s(r, 't-value')}/versions")
    r.call("version 1", "GET", f"/subjects/{_s(r, 't-value')}/versions/1")
    r.call("latest", "GET", f"/subjects/{_s(r, 't-value')}/versions/latest")
    r.call("-1", "GET", f"/subjects/{_s(r, 't-value')}/versions/-1")
    r.call("raw schema", "GET", f"/subjects/{_s(r, 't-value')}/versions/1/schema")


@scenario
def one_schema_one_id(r: Registry) -> None:
    register(r, "under a topic's subject", "a-value", V1)
    register(r, "under a record's subject", "conf.Reading", V1)
    register(r, "under a key subject", "a-key", V1)
    r.call("versions of a key subject", "GET", f"/subjects/{_s(r, 'a-key')}/versions")


@scenario
def lookup(r: Registry) -> None:
    register(r, "register", "l-value", V1)
    r.call("registered", "POST", f"/subjects/{_s(r, 'l-value')}", {"schema": V1})
    r.call("not registered", "POST", f"/subjects/{_s(r, 'l-value')}", {"schema": V2})
    r.call("unknown subject", "POST", f"/subjects/{_s(r, 'nobody-value')}", {"schema": V1})


@scenario
def evolve_under_backward(r: Registry) -> None:
    r.call("global level", "PUT", "/config", {"compatibility": "BACKWARD"})
    register(r, "v1", "e-value", V1)
    register(r, "compatible v2", "e-value", V2)
    register(r, "incompatible", "e-value", BAD)
    r.call("versions", "GET", f"/subjects/{_s(r, 'e-value')}/versions")
    check = f"/compatibility/subjects/{_s(r, 'e-value')}/versions/latest"
    r.call("check compatible", "POST", check, {"schema": V2})
    r.call("check incompatible", "POST", check, {"schema": BAD})


@scenario
def subject_level_of_a_kept_subject(r: Registry) -> None:
    name = "conf.Kept"
    r.call("no level yet", "GET", f"/config/{_s(r, name)}")
    r.call("set FULL", "PUT", f"/config/{_s(r, name)}", {"compatibility": "FULL"})
    r.call("read it", "GET", f"/config/{_s(r, name)}")
    register(r, "v1", name, V1)
    register(r, "incompatible", name, BAD)
    r.call("remove it", "DELETE", f"/config/{_s(r, name)}")
    r.call("gone", "GET", f"/config/{_s(r, name)}")
    r.call("bad level", "PUT", f"/config/{_s(r, name)}", {"compatibility": "SIDEWAYS"})


@scenario
def delete_versions(r: Registry) -> None:
    r.call("global level", "PUT", "/config", {"compatibility": "NONE"})
    name = "conf.Versions"
    register(r, "v1", name, V1)
    register(r, "v2", name, V2)
    r.call("permanent before soft", "DELETE", f"/subjects/{_s(r, name)}/versions/1?permanent=true")
    r.call("soft", "DELETE", f"/subjects/{_s(r, name)}/versions/1")
    r.call("soft again", "DELETE", f"/subjects/{_s(r, name)}/versions/1")
    r.call("versions", "GET", f"/subjects/{_s(r, name)}/versions")
    r.call("with deleted", "GET", f"/subjects/{_s(r, name)}/versions?deleted=true")
    r.call("deleted one", "GET", f"/subjects/{_s(r, name)}/versions/1")
    r.call("permanent", "DELETE", f"/subjects/{_s(r, name)}/versions/1?permanent=true")
    r.call("versions after", "GET", f"/subjects/{_s(r, name)}/versions?deleted=true")


@scenario
def delete_subject(r: Registry) -> None:
    r.call("global level", "PUT", "/config", {"compatibility": "NONE"})
    name = "conf.Gone"
    register(r, "v1", name, V1)
    register(r, "v2", name, V2)
    r.call("permanent before soft", "DELETE", f"/subjects/{_s(r, name)}?permanent=true")
    r.call("soft", "DELETE", f"/subjects/{_s(r, name)}")
    r.call("soft again", "DELETE", f"/subjects/{_s(r, name)}")
    r.call("versions", "GET", f"/subjects/{_s(r, name)}/versions")
    r.call("permanent", "DELETE", f"/subjects/{_s(r, name)}?permanent=true")
    r.call("versions after", "GET", f"/subjects/{_s(r, name)}/versions?deleted=true")
    register(r, "again", name, V2)
    r.call("numbered from 1", "GET", f"/subjects/{_s(r, name)}/versions")


@scenario
def bad_requests(r: Registry) -> None:
    register(r, "not avro", "b-value", '{"type": "recrd"}')
    register(r, "not json", "b-value", "{")
    register(r, "v1", "b-value", V1)
    r.call("version abc", "GET", f"/subjects/{_s(r, 'b-value')}/versions/abc")
    r.call("version 0", "GET", f"/subjects/{_s(r, 'b-value')}/versions/0")
    r.call("version 7", "GET", f"/subjects/{_s(r, 'b-value')}/versions/7")
    r.call("unknown subject", "GET", f"/subjects/{_s(r, 'nobody-value')}/versions")
    r.call("unknown id", "GET", "/schemas/ids/987654")


@scenario
def schemas_by_id(r: Registry) -> None:
    register(r, "register", "i-value", V1)
    found = r.call("its version", "GET", f"/subjects/{_s(r, 'i-value')}/versions/1")
    schema_id = found["id"] if isinstance(found, dict) else 0
    r.call("by id", "GET", f"/schemas/ids/{schema_id}")
    r.call("raw by id", "GET", f"/schemas/ids/{schema_id}/schema")
    r.call("its versions", "GET", f"/schemas/ids/{schema_id}/versions")


@scenario
def types_and_mode(r: Registry) -> None:
    r.call("types", "GET", "/schemas/types")
    r.call("mode", "GET", "/mode")


@scenario
def listing_subjects(r: Registry) -> None:
    r.call("global level", "PUT", "/config", {"compatibility": "NONE"})
    register(r, "a", "x-value", V1)
    register(r, "b", "conf.Listed", V2)
    register(r, "c", "conf.Dropped", V1)
    r.call("drop one", "DELETE", f"/subjects/{_s(r, 'conf.Dropped')}")
    mine = quote(r.prefix, safe="")
    r.call("subjects", "GET", f"/subjects?subjectPrefix={mine}")
    r.call("with deleted", "GET", f"/subjects?subjectPrefix={mine}&deleted=true")
    r.call("deleted only", "GET", f"/subjects?subjectPrefix={mine}&deletedOnly=true")
    found = r.call("an id", "GET", f"/subjects/{_s(r, 'conf.Listed')}/versions/1")
    schema_id = found["id"] if isinstance(found, dict) else 0
    r.call("its subjects", "GET", f"/schemas/ids/{schema_id}/subjects")


@scenario
def check_compatibility(r: Registry) -> None:
    name = "conf.Checked"
    r.call("set BACKWARD", "PUT", f"/config/{_s(r, name)}", {"compatibility": "BACKWARD"})
    check = f"/compatibility/subjects/{_s(r, name)}/versions/latest"
    r.call("nothing to check against", "POST", check, {"schema": BAD})
    register(r, "v1", name, V1)
    r.call("compatible", "POST", check, {"schema": V2})
    r.call("incompatible", "POST", check, {"schema": BAD})
    r.call("against version 1", "POST",
           f"/compatibility/subjects/{_s(r, name)}/versions/1", {"schema": V2})  # fmt: skip
    r.call("against a missing version", "POST",
           f"/compatibility/subjects/{_s(r, name)}/versions/9", {"schema": V2})  # fmt: skip
    r.call("an invalid schema", "POST", check, {"schema": "{"})


@scenario
def json_schema_subjects(r: Registry) -> None:
    def body(schema: str) -> dict[str, str]:
        return {"schema": schema, "schemaType": "JSON"}

    versions = f"/subjects/{_s(r, 'j-value')}/versions"
    r.call("global level", "PUT", "/config", {"compatibility": "BACKWARD"})
    r.call("v1", "POST", versions, body(J1))
    r.call("v1 again", "POST", versions, body(J1))
    found = r.call("latest", "GET", f"{versions}/latest")
    schema_id = found["id"] if isinstance(found, dict) else 0
    r.call("by id", "GET", f"/schemas/ids/{schema_id}")
    r.call("lookup", "POST", f"/subjects/{_s(r, 'j-value')}", body(J1))
    check = f"/compatibility/subjects/{_s(r, 'j-value')}/versions/latest"
    r.call("check compatible", "POST", check, body(J2))
    r.call("check narrowed", "POST", check, body(J_NARROWED))
    r.call("compatible v2", "POST", versions, body(J2))
    r.call("narrowed", "POST", versions, body(J_NARROWED))
    key = f"/subjects/{_s(r, 'j-key')}/versions"
    r.call("a key's string", "POST", key, body(json.dumps({"type": "string"})))
    r.call("not a JSON Schema", "POST", key, body(json.dumps({"type": 5})))


@scenario
def protobuf_subjects(r: Registry) -> None:
    def body(schema: str) -> dict[str, str]:
        return {"schema": schema, "schemaType": "PROTOBUF"}

    subject = _s(r, "conf.Reading")
    versions = f"/subjects/{subject}/versions"
    r.call("global level", "PUT", "/config", {"compatibility": "BACKWARD"})
    r.call("v1", "POST", versions, body(P1))
    r.call("v1 again", "POST", versions, body(P1))
    r.call("lookup", "POST", f"/subjects/{subject}", body(P1))
    check = f"/compatibility/subjects/{subject}/versions/latest"
    r.call("check string to bytes", "POST", check, body(P_BYTES))
    r.call("check string to int64", "POST", check, body(P_NUMBER))
    r.call("string to bytes", "POST", versions, body(P_BYTES))
    r.call("string to int64", "POST", versions, body(P_NUMBER))
    r.call("not a descriptor", "POST", versions, body("////"))


def proto_text(note_type: str) -> str:
    """The same schema as `.proto` text, what Java's serializers send."""
    return (
        'syntax = "proto3";\npackage conf;\n\n'
        f"message Reading {{\n  string sensor = 1;\n  {note_type} note = 2;\n}}\n"
    )


@scenario
def protobuf_text(r: Registry) -> None:
    def body(schema: str) -> dict[str, str]:
        return {"schema": schema, "schemaType": "PROTOBUF"}

    subject = _s(r, "conf.ReadingText")
    versions = f"/subjects/{subject}/versions"
    r.call("global level", "PUT", "/config", {"compatibility": "BACKWARD"})
    r.call("v1", "POST", versions, body(proto_text("string")))
    r.call("v1 respaced", "POST", versions, body(proto_text("string").replace("\n", "\n\n")))
    check = f"/compatibility/subjects/{subject}/versions/latest"
    r.call("check string to int64", "POST", check, body(proto_text("int64")))
    r.call("string to int64", "POST", versions, body(proto_text("int64")))
    r.call("v2 a field more", "POST", versions,
           body(proto_text("string").replace("}\n", "  int32 more = 3;\n}\n")))  # fmt: skip
    r.call("versions", "GET", versions)
    r.call("unknown type", "POST", versions, body(proto_text("strin")))
    r.call("imports a file", "POST", versions,
           body('syntax = "proto3";\nimport "team/other.proto";\nmessage A {}\n'))  # fmt: skip


MONEY = record(("cents", "long", None))


@scenario
def references(r: Registry) -> None:
    money, order = _s(r, "ref.Money"), _s(r, "ref.Order")
    r.call("money", "POST", f"/subjects/{money}/versions", {"schema": MONEY})
    named = json.loads(MONEY)
    full = f"{named.get('namespace', '')}.{named['name']}".lstrip(".")
    order_schema = json.dumps({
        "type": "record", "name": "Order", "namespace": "conf.ref",
        "fields": [{"name": "price", "type": full}],
    })  # fmt: skip
    ref = [{"name": full, "subject": r.subject("ref.Money"), "version": 1}]
    versions = f"/subjects/{order}/versions"
    r.call("order without its reference", "POST", versions, {"schema": order_schema})
    r.call("order", "POST", versions, {"schema": order_schema, "references": ref})
    r.call("order again", "POST", versions, {"schema": order_schema, "references": ref})
    r.call("order's version", "GET", f"{versions}/1")
    r.call("referenced by", "GET", f"/subjects/{money}/versions/1/referencedby", ids=True)
    r.call("delete the referenced version", "DELETE", f"/subjects/{money}/versions/1")
    r.call("a reference to no version", "POST", versions,
           {"schema": order_schema, "references": [{**ref[0], "version": 9}]})  # fmt: skip
