"""Protobuf schemas as `.proto` text: protoc compiles them (in a worker process), and the
registry writes a descriptor back as text that protoc compiles to the very same
descriptor, which is what Java's deserializers parse when they ask for a schema."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.registry.errors import RegistryError
from kop.registry.protobuf.compiler import ProtoCompiler, ProtoErrors, compile_text
from kop.registry.protobuf.descriptors import WELL_KNOWN, file_of
from kop.registry.protobuf.text import proto_text
from kop.registry.schemas import PROTOBUF, Schema, parse, shown

CORPUS = sorted((Path(__file__).parent / "proto_corpus").glob("*.proto"))


def compiled(text: str) -> descriptor_pb2.FileDescriptorProto:
    return descriptor_pb2.FileDescriptorProto.FromString(compile_text(text))


def as_protoc_writes(
    file: descriptor_pb2.FileDescriptorProto,
) -> descriptor_pb2.FileDescriptorProto:
    """`file` as protoc compiles it from text: named as a text schema is, and without the
    json_name of map entries' fields that protobuf's runtime adds to its own copies."""
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(file)
    out.name = "default.proto"
    out.ClearField("source_code_info")

    def strip(message: descriptor_pb2.DescriptorProto) -> None:
        for nested in message.nested_type:
            if nested.options.map_entry:
                for field in nested.field:
                    field.ClearField("json_name")
            strip(nested)

    for message in out.message_type:
        strip(message)
    return out


@pytest.mark.parametrize("name", sorted(WELL_KNOWN))
def test_the_well_known_types_print_as_text_protoc_compiles_back_to_them(name: str) -> None:
    """descriptor.proto among them: proto2 with defaults, extension ranges, nested enums
    and every kind of option."""
    file = descriptor_pb2.FileDescriptorProto()
    WELL_KNOWN[name].CopyToProto(file)
    assert compiled(proto_text(file)) == as_protoc_writes(file)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_proto2_proto3_and_editions_schemas_print_back_to_themselves(path: Path) -> None:
    """Groups, maps between nested types, oneofs, defaults with escapes, extensions,
    reserved names, services and edition 2023's features."""
    file = compiled(path.read_text())
    again = proto_text(file)
    assert compiled(again) == file
    assert proto_text(compiled(again)) == again


def test_a_map_entry_keeps_its_place_among_nested_types() -> None:
    file = compiled(
        'syntax = "proto3"; message A { message B {} map<string, B> m = 1; message C {} }'
    )
    assert [n.name for n in file.message_type[0].nested_type] == ["B", "MEntry", "C"]
    assert compiled(proto_text(file)) == file
    assert "map<string, .A.B> m = 1;" in proto_text(file)


async def test_text_and_base64_of_one_file_are_one_schema_shown_either_way() -> None:
    text = 'syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; string note = 2; }\n'
    schema = await parse(text, PROTOBUF)
    assert file_of(schema.text) == compiled(text)
    assert (await parse(shown(schema, "serialized"), PROTOBUF)) == schema
    assert (await parse(shown(schema), PROTOBUF)) == schema
    assert "message Order {" in shown(schema)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('syntax = "proto3";\nmessage A { strin a = 1; }', '2:13: "strin" is not defined'),
        ('syntax = "proto3"; import "team/x.proto"; message A {}', "imports 'team/x.proto'"),
        ('syntax = "proto3"; import "../../etc/passwd"; message A {}', '".." are not allowed'),
        ('syntax = "proto3"; import "/etc/passwd"; message A {}', "imports '/etc/passwd'"),
        ('syntax = "proto3"; message A { int32 a = 1; int32 b = 1; }', "has already been used"),
    ],
)
async def test_what_protoc_refuses_is_42201_with_its_message(text: str, said: str) -> None:
    with pytest.raises(RegistryError) as refused:
        await parse(text, PROTOBUF)
    assert refused.value.code == 42201
    assert said in refused.value.message
    assert "root:" not in refused.value.message  # no line of /etc/passwd quoted


async def test_a_compile_past_its_deadline_is_refused_and_its_worker_replaced() -> None:
    slow = ProtoCompiler(timeout_s=0.001)  # the worker's start alone takes longer
    with pytest.raises(RegistryError) as refused:
        await slow.compile('syntax = "proto3"; message A {}')
    assert "took over" in refused.value.message
    slow._timeout_s = 60.0
    file = await slow.compile('syntax = "proto3"; message A { int32 a = 1; }')
    assert file.message_type[0].field[0].name == "a"
    slow.close()


async def test_registrations_waiting_for_the_worker_are_bounded_per_namespace() -> None:
    """One namespace has two compiles waiting at most: another's is taken meanwhile."""
    compiler = ProtoCompiler(max_waiting=16, max_per_owner=2)
    texts = [f'syntax = "proto3"; message A{i} {{}}' for i in range(4)]
    asked = [compiler.compile(t, owner="hostile/ns") for t in texts]
    other = compiler.compile('syntax = "proto3"; message B {}', owner="other/ns")
    *results, theirs = await asyncio.gather(*asked, other, return_exceptions=True)
    refused = [r for r in results if isinstance(r, RegistryError)]
    assert len(refused) == 2 and "this namespace's" in refused[0].message
    assert isinstance(theirs, descriptor_pb2.FileDescriptorProto)
    assert theirs.message_type[0].name == "B"
    compiler.close()


async def test_registrations_waiting_for_the_worker_are_bounded_in_all() -> None:
    compiler = ProtoCompiler(max_waiting=2, max_per_owner=16)
    texts = [f'syntax = "proto3"; message A{i} {{}}' for i in range(4)]
    asked = [compiler.compile(t, owner=f"ns{i}") for i, t in enumerate(texts)]
    results = await asyncio.gather(*asked, return_exceptions=True)
    refused = [r for r in results if isinstance(r, RegistryError)]
    assert len(refused) == 2 and "try again" in refused[0].message
    compiler.close()


def test_protoc_messages_name_the_schemas_line_and_column() -> None:
    with pytest.raises(ProtoErrors, match=r"^3:1: Expected"):
        compile_text('syntax = "proto3";\nmessage A {}\n}')


_SCALAR = ["double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes"]  # fmt: skip
_TEXTS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)


def _literal(value: str) -> str:
    """A string literal for protoc, every character escaped as octal UTF-8 bytes: how the
    schema is written must not matter, only what it holds."""
    return '"' + "".join(f"\\{b:03o}" for b in value.encode()) + '"'


@st.composite
def _schemas(draw: st.DrawFn) -> str:
    """A proto2 or proto3 file: messages with scalar, enum, message, map, repeated and
    oneof fields, nested messages and enums, reserved numbers and names, string defaults
    and json_names of any characters."""
    proto2 = draw(st.booleans())
    names = iter(f"N{i}" for i in range(10_000))
    lines = [f'syntax = "{"proto2" if proto2 else "proto3"}";', "package gen.v1;"]

    def message(depth: int) -> list[str]:
        name = next(names)
        body: list[str] = []
        numbers = iter(range(1, 10_000))
        enum = next(names)
        body.append(f"enum {enum} {{ {enum}_ZERO = 0; {enum}_ONE = 1; }}")
        nested = [message(depth + 1) for _ in range(draw(st.integers(0, 2 if depth < 2 else 0)))]
        kinds = [*_SCALAR, enum, *(n[0].split()[1] for n in nested)]
        for nest in nested:
            body.extend(nest)
        in_oneof: list[str] = []
        for _ in range(draw(st.integers(0, 6))):
            field, number = next(names).lower(), next(numbers)
            shape = draw(st.sampled_from(["plain", "repeated", "map", "oneof", "optional"]))
            kind = draw(st.sampled_from(kinds))
            options = []
            if draw(st.booleans()):
                options.append(f"json_name = {_literal(draw(_TEXTS) + field)}")  # unique
            if shape == "map":
                key = draw(st.sampled_from(["string", "int32", "uint64", "bool", "sfixed64"]))
                body.append(f"map<{key}, {kind}> {field} = {number};")
                continue
            if shape == "oneof":
                in_oneof.append(f"{kind} {field} = {number}{_opts(options)};")
                continue
            if proto2 and kind == "string" and shape != "repeated" and draw(st.booleans()):
                options.append(f"default = {_literal(draw(_TEXTS))}")
            label = {"repeated": "repeated ", "optional": "optional ", "plain": ""}[shape]
            if proto2 and not label:
                label = "optional "
            body.append(f"{label}{kind} {field} = {number}{_opts(options)};")
        if in_oneof:
            body.append(f"oneof {next(names).lower()} {{ {' '.join(in_oneof)} }}")
        if draw(st.booleans()):
            body.append(f"reserved 9000 to 9010, 9100; reserved {_literal(draw(_TEXTS))};")
        return [f"message {name} {{", *("  " + b for b in body), "}"]

    for _ in range(draw(st.integers(1, 3))):
        lines.extend(message(0))
    return "\n".join(lines) + "\n"


def _opts(options: list[str]) -> str:
    return f" [{', '.join(options)}]" if options else ""


@settings(max_examples=200, deadline=None)
@given(_schemas())
def test_generated_schemas_print_back_to_themselves(text: str) -> None:
    try:
        file = compiled(text)
    except ProtoErrors as refused:  # a reserved name that is no identifier, say: a warning
        raise AssertionError(f"{refused}\n{text}") from None
    assert compiled(proto_text(file)) == file, proto_text(file)


_PIECES = st.sampled_from(
    ["{", "}", ";", "=", '"', "\\", "message", "enum", "map<", ">", "1", "-1", "0x7fffffff",
     "optional", "repeated", "group", "oneof", "import", "[default = ", "]", "\n", "\x00", "é"]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_edit_of_a_schema_is_a_schema_that_prints_back_or_a_42201(data: st.DataObject) -> None:
    """Schemas cut and spliced at random: protoc takes one (whose text then compiles back
    to it) or refuses it with 42201; nothing else comes out, and the worker lives on."""
    text = data.draw(st.sampled_from([p.read_text() for p in CORPUS]))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 12))
        text = text[:at] + data.draw(_PIECES) + text[at + cut :]
    try:
        schema = _parsed(text)
    except RegistryError as refused:
        assert refused.code == 42201
        return
    assert _parsed(shown(schema)) == schema


def _parsed(text: str) -> Schema:
    """`parse` on a loop of its own thread (the tests keep the main thread's loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as one:
        return one.submit(asyncio.run, parse(text, PROTOBUF)).result()


def _gone(pid: int, within_s: float = 30.0) -> bool:
    """Whether process `pid` ended (and was reaped, or is a zombie) within the deadline."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except OSError:  # no such file, or (ESRCH) reaped between opening and reading it
            return True
        time.sleep(0.05)
    return False


def test_the_worker_ends_when_its_kop_is_killed() -> None:
    """A kop killed (-9, or gone without closing the compiler) leaves no worker behind:
    it watches its parent. Before, every stopped kop left a 100 MB worker waiting."""
    code = (
        "import asyncio, os\n"
        "from kop.registry.protobuf.compiler import ProtoCompiler\n"
        "c = ProtoCompiler()\n"
        "asyncio.run(c.compile('syntax = \"proto3\"; message A {}'))\n"
        "print(c.worker_pids[0], flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert _gone(int(out.stdout.split()[0]))


async def test_closing_the_compiler_stops_its_worker() -> None:
    compiler = ProtoCompiler()
    await compiler.compile('syntax = "proto3"; message A {}')
    (pid,) = compiler.worker_pids
    compiler.close()
    assert compiler.worker_pids == []
    assert await asyncio.to_thread(_gone, pid)
