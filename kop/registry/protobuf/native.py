"""A Protobuf subject's schema as Pulsar keeps a topic's: PROTOBUF_NATIVE, whose data is
the JSON {"fileDescriptorSet": base64 of the root file and every file it imports,
"rootMessageTypeName", "rootFileDescriptorName"}, what Pulsar's ProtobufNativeSchema
producers and consumers (Java's, Python's) upload and read.

Why the first message is the root: a Confluent Protobuf schema is a whole file, and its
serializers name the message of each value by its indexes in the file (b"\\x00" for the
first, the common case of one message per file). Pulsar names one root message per
version, so kop makes it the file's first message and converts the values that name it;
a version a Pulsar producer uploaded with another root is not shown as the subject's.
The JSON is compact and its files in a fixed order, so the same schema uploaded twice is
the same bytes, which Pulsar answers with the version it has.
"""

from __future__ import annotations

import base64
import binascii
import json

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from kop.registry.errors import RegistryError
from kop.registry.protobuf.descriptors import canonical_protobuf, file_of, imports_of, referenced
from kop.registry.references import Imports

PROTOBUF_NATIVE = "PROTOBUF_NATIVE"
FIRST_MESSAGE = b"\x00"  # Confluent's message indexes of a file's first message


def native_data(text: str, imports: Imports = ()) -> str:
    """The PROTOBUF_NATIVE data of a canonical Protobuf schema (canonical_protobuf's),
    with the files its references name (`imports`) and every well-known file any of
    them imports, each before its importers; ValueError when the file has no message
    to be the root."""
    file = file_of(text)
    if not file.message_type:
        raise ValueError("a topic's Protobuf schema needs a message: its file has none")
    named = referenced(imports)
    known: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for one in [*(f for _, f in named), file]:
        for imported in imports_of(one):
            known.setdefault(imported.name, imported)
    files = descriptor_pb2.FileDescriptorSet(file=[*known.values(), *(f for _, f in named), file])
    root = file.message_type[0].name
    return json.dumps(
        {
            "fileDescriptorSet": base64.b64encode(
                files.SerializeToString(deterministic=True)
            ).decode(),
            "rootMessageTypeName": f"{file.package}.{root}" if file.package else root,
            "rootFileDescriptorName": file.name,
        },
        separators=(",", ":"),
    )


def schema_of_native(data: str) -> str | None:
    """The canonical Protobuf schema a PROTOBUF_NATIVE version is to the registry: its
    root file, when its root is that file's first message and it imports only Protobuf's
    well-known types (None otherwise: not shown, its values not converted)."""
    try:
        native = json.loads(data)
        files = descriptor_pb2.FileDescriptorSet.FromString(
            base64.b64decode(native["fileDescriptorSet"], validate=True)
        )
        root_file, root = str(native["rootFileDescriptorName"]), str(native["rootMessageTypeName"])
    except (ValueError, KeyError, TypeError, binascii.Error, DecodeError):
        return None
    file = next((f for f in files.file if f.name == root_file), None)
    if file is None or not file.message_type:
        return None
    first = file.message_type[0].name
    if root != (f"{file.package}.{first}" if file.package else first):
        return None
    try:
        return canonical_protobuf(base64.standard_b64encode(file.SerializeToString()).decode())
    except RegistryError:  # whatever a Pulsar client wrote: not shown
        return None
