"""`.proto` text compiled to a FileDescriptorProto by protoc itself, in a worker process.

Why protoc: the grammar, name resolution and checks of `.proto` files are protoc's to
define; grpcio-tools carries it as a Python extension, with the well-known types'
`.proto` files beside it. Why a worker process: protoc holds the GIL while it compiles
(a 700 KB schema took 0.3 s), so on the event loop one registration would stall every
Kafka connection of the instance, and a crash in compiled code would take kop down. The
worker is one process for the whole kop (registrations are rare), started on the first
text schema, memory-capped, killed and replaced when a compile outlasts its deadline.

What protoc may read: the schema is written into a fresh directory with the files its
references name (under their import paths, which kop.registry.references allows only
as plain relative paths, and this module checks again), and the only other include
path is grpcio-tools' own copy of the well-known types. protoc refuses import paths
holding `..`, so a schema cannot make it read (and quote in an error) any other file
of the machine.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import multiprocessing
import os
import resource
import tempfile
import warnings
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from google.protobuf import descriptor_pb2

from kop.registry.errors import invalid_schema

# The name a schema given as text gets (Confluent's clients name a file-less schema so).
FILE_NAME = "default.proto"
COMPILE_TIMEOUT_S = 10.0
WORKER_MEMORY_BYTES = 2 << 30
# Registrations waiting for the one worker past this are refused at once (42201): a
# tenant sending text schemas in a loop queues behind itself, not forever.
MAX_WAITING = 16
_MAX_ERRORS = 5  # protoc's messages quoted in a refusal


class ProtoErrors(Exception):
    """protoc's own messages (`line:column: message`), for the registry's 42201."""


def compile_text(text: str, files: tuple[tuple[str, str], ...] = ()) -> bytes:
    """The serialized FileDescriptorProto of `text`, which may import `files` (import
    path, `.proto` text: its references'); runs in the worker."""
    import grpc_tools  # type: ignore[import-untyped]
    from grpc_tools import _protoc_compiler as protoc

    known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory(prefix="kop-proto-") as here:
        root = Path(here).resolve()
        for name, imported in files:
            path = (root / name).resolve()
            if root not in path.parents or name == FILE_NAME:  # checked before, and again
                raise ProtoErrors(f"{name!r} is no path inside the schema's directory")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(imported, encoding="utf-8")
        (root / FILE_NAME).write_text(text, encoding="utf-8")
        try:
            with warnings.catch_warnings():  # protoc's warnings: it took the schema
                warnings.simplefilter("ignore")
                generated = protoc.get_protos(FILE_NAME.encode(), [bytes(root), bytes(known)])
        except protoc.ProtocErrors as exc:
            raise ProtoErrors(_messages(exc.errors())) from None
    own = FILE_NAME.removesuffix(".proto") + "_pb2.py"
    for name, code in generated:
        if name.decode() == own:
            return _serialized_file(code.decode())
    raise ProtoErrors("protoc generated no module for the schema")


def _messages(found: list[object]) -> str:
    missing = [
        getattr(error, "filename", b"").decode(errors="replace")
        for error in found
        if getattr(error, "message", b"") == b"File not found."
    ]
    if missing:
        return (
            f"the schema imports {missing[0]!r}: schema references are not served by kop yet "
            "(Protobuf's well-known types are)"
        )
    out = []
    for error in found[:_MAX_ERRORS]:
        filename = getattr(error, "filename", b"").decode(errors="replace")
        line, column = getattr(error, "line", -1), getattr(error, "column", -1)
        message = getattr(error, "message", b"").decode(errors="replace")
        where = f"{line + 1}:{column + 1}: " if filename == FILE_NAME and line >= 0 else ""
        out.append(where + message)
    return "; ".join(out) or "protoc refused the schema"


def _serialized_file(code: str) -> bytes:
    """The bytes protoc's Python output passes to `AddSerializedFile`: the compiled
    FileDescriptorProto, as the generated module itself would register it."""
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "AddSerializedFile"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            return node.args[0].value
    raise ProtoErrors("protoc's output holds no descriptor")


def _limit_worker() -> None:
    """The worker's memory capped; protoc's own log lines (warnings such as "no syntax
    specified") dropped: what it refuses comes back as ProtoErrors."""
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)


class ProtoCompiler:
    """The one worker process and the registrations waiting for it."""

    def __init__(self, timeout_s: float = COMPILE_TIMEOUT_S, max_waiting: int = MAX_WAITING):
        self._timeout_s = timeout_s
        self._max_waiting = max_waiting
        self._waiting = 0
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    async def compile(
        self, text: str, files: tuple[tuple[str, str], ...] = ()
    ) -> descriptor_pb2.FileDescriptorProto:
        """The schema's FileDescriptorProto; RegistryError 42201 with protoc's messages
        when it is none, or when compiling it took too long or too much."""
        if self._waiting >= self._max_waiting:
            raise invalid_schema("too many .proto schemas are being compiled; try again")
        self._waiting += 1
        try:
            data = await self._run(text, files)
        finally:
            self._waiting -= 1
        return descriptor_pb2.FileDescriptorProto.FromString(data)

    async def _run(self, text: str, files: tuple[tuple[str, str], ...]) -> bytes:
        pool = self._worker()
        future = asyncio.get_running_loop().run_in_executor(pool, compile_text, text, files)
        try:
            async with asyncio.timeout(self._timeout_s):
                return await future
        except ProtoErrors as exc:
            raise invalid_schema(f"not a valid .proto schema: {exc}") from None
        except TimeoutError:
            self._discard(pool)
            raise invalid_schema(
                f"compiling the .proto schema took over {self._timeout_s:g}s"
            ) from None
        except (BrokenProcessPool, MemoryError):
            self._discard(pool)
            raise invalid_schema("compiling the .proto schema failed (out of memory?)") from None

    def _worker(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_limit_worker,
            )
        return self._pool

    def _discard(self, pool: concurrent.futures.ProcessPoolExecutor) -> None:
        """Kill a worker stuck in (or killed by) a compile; the next one starts anew."""
        if self._pool is pool:
            self._pool = None
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                os.kill(process.pid, 9)

    def close(self) -> None:
        if self._pool is not None:
            self._discard(self._pool)


# One per kop process: the registry's instances share it.
COMPILER = ProtoCompiler()
