"""Mutations of a request frame, as a fuzzer makes them.

Raw ones (bit flips, byte runs, inserted and deleted bytes, truncation, splices
of two frames) and structure-aware ones: the lengths and counts of the frame,
found by the same walk that checks them in kop (`kop.protocol.bounds`), set to
the values that break decoders (huge, negative, one past what follows, a
varint too long), plus api key and version swaps and size prefixes that lie.
"""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass

from kio.index import load_request_schema

from kop.protocol.bounds import Budget, FrameShapeError, check_request
from kop.protocol.messages import SUPPORTED_VERSIONS
from kop.protocol.records import uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">hh")


@dataclass(frozen=True, slots=True)
class Mutant:
    wire: bytes  # what is sent: size prefix and frame
    how: str

    @property
    def frame(self) -> bytes:
        """The frame without its prefix, as a decoder sees it."""
        return self.wire[4:]


def prefixed(frame: bytes) -> bytes:
    return _I32.pack(len(frame)) + frame


def length_fields(frame: bytes) -> list[tuple[int, str]]:
    """Where the frame's lengths and counts are, and their wire forms."""
    if len(frame) < 4:
        return []
    api_key, version = _HEAD.unpack_from(frame)
    try:
        schema = load_request_schema(api_key, version)
    except Exception:  # not an API kio knows: no structure to use
        return []
    found: list[tuple[int, str]] = []
    # The lengths before a break are still worth mutating.
    with contextlib.suppress(FrameShapeError):
        check_request(schema.__header_schema__, schema, frame, Budget(1 << 30, found))
    return found


_HUGE_I32 = [0x7FFFFFFF, -2, -(2**31), 0x10000000]
_HUGE_I16 = [0x7FFF, -2, -(2**15)]
# varints: 2^35-ish (the frame), 2^32 - 1, and one of six bytes
_HUGE_VARINTS = [b"\xff\xff\xff\xfb\x6e", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\x01"]


def _set_length(frame: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    fields = length_fields(frame)
    if not fields:
        return None
    pos, form = rng.choice(fields)
    out = bytearray(frame)
    remaining = max(len(frame) - pos, 0)
    if form == "i32":
        value = rng.choice([*_HUGE_I32, remaining, remaining + 1, rng.randrange(1 << 31)])
        out[pos : pos + 4] = _I32.pack(value)
        return bytes(out), f"i32 length at {pos} = {value}"
    if form == "i16":
        value = rng.choice([*_HUGE_I16, min(remaining, 0x7FFF), rng.randrange(1 << 15)])
        out[pos : pos + 2] = _I16.pack(value)
        return bytes(out), f"i16 length at {pos} = {value}"
    end = pos
    while end < len(frame) and frame[end] & 0x80:
        end += 1
    new = rng.choice([*_HUGE_VARINTS, uvarint(remaining + 1), uvarint(rng.randrange(1 << 28))])
    out[pos : end + 1] = new
    return bytes(out), f"varint length at {pos} = {new.hex()}"


def _bit_flips(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(frame)
    flips = rng.randrange(1, 9)
    for _ in range(flips):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out), f"{flips} bit flips"


def _byte_run(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(frame)
    start = rng.randrange(len(out))
    size = rng.randrange(1, 17)
    fill = rng.choice([b"\x00", b"\xff", b"\x7f", b"\x80"])
    run = fill * size if rng.random() < 0.7 else rng.randbytes(size)
    out[start : start + size] = run
    return bytes(out[: len(frame)]), f"run of {size} at {start}"


def _insert_delete(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    i = rng.randrange(len(frame) + 1)
    if rng.random() < 0.5:
        size = rng.randrange(1, 9)
        return frame[:i] + rng.randbytes(size) + frame[i:], f"{size} bytes inserted at {i}"
    size = rng.randrange(1, 9)
    return frame[:i] + frame[i + size :], f"{size} bytes deleted at {i}"


def _truncate(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    cut = rng.randrange(len(frame))
    return frame[:cut], f"truncated to {cut}"


def _swap_api(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Another API's key or another version on this body: decoders read it as theirs."""
    keys = [int(k) for k in SUPPORTED_VERSIONS]
    if rng.random() < 0.5:
        key = rng.choice(keys)
        low, high = SUPPORTED_VERSIONS[key]  # type: ignore[index]
        version = rng.randrange(low, high + 1)
    else:
        key = _HEAD.unpack_from(frame.ljust(4, b"\0"))[0]
        version = rng.choice([-1, 0, 1, 2, 5, 9, 12, 13, 99, rng.randrange(1 << 15)])
    return _HEAD.pack(key, version) + frame[4:], f"api {key} v{version} header"


def _splice(frame: bytes, other: bytes, rng: random.Random) -> tuple[bytes, str]:
    i = rng.randrange(len(frame) + 1)
    j = rng.randrange(len(other) + 1)
    return frame[:i] + other[j:], f"splice at {i} of another frame from {j}"


_BODY_MUTATIONS: list[tuple[float, Callable[[bytes, random.Random], tuple[bytes, str] | None]]] = [
    (0.30, _set_length),
    (0.20, _bit_flips),
    (0.12, _byte_run),
    (0.12, _insert_delete),
    (0.10, _truncate),
    (0.08, _swap_api),
]


def mutate(frame: bytes, rng: random.Random, others: list[bytes]) -> Mutant:
    """One mutant of `frame`: one to three mutations, and sometimes a lying prefix."""
    hows: list[str] = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        roll = rng.random()
        done = None
        for weight, mutation in _BODY_MUTATIONS:
            if roll < weight:
                done = mutation(frame, rng) if frame else None
                break
            roll -= weight
        else:
            done = _splice(frame, rng.choice(others), rng) if others else None
        if done is not None:
            frame, how = done
            hows.append(how)
    wire = prefixed(frame)
    if rng.random() < 0.04:  # a prefix that lies: kop waits for bytes never sent, or reads
        size = rng.choice([len(frame) + 1, max(len(frame) - 1, 0), 0, -1, 0x7FFFFFFF])
        wire = _I32.pack(size) + frame  # past the frame into the next one
        hows.append(f"prefix says {size}")
    return Mutant(wire, "; ".join(hows) or "unchanged")


def schema_of(frame: bytes) -> str:
    if len(frame) < 4:
        return "short"
    api_key, version = _HEAD.unpack_from(frame)
    try:
        return f"{load_request_schema(api_key, version).__name__}v{version}"
    except Exception:
        return f"api{api_key}v{version}"
