"""Frames that once crashed or hung a decoder or kop, kept as regression inputs.

Each is stored as sent on the wire (size prefix included) in `tests/corpus/`,
named `<kind>-<schema>-<sha1[:12]>.bin`, so the name says what it hit and
the same frame is never stored twice.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from fuzz.mutate import schema_of

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"


def save(wire: bytes, kind: str, directory: Path = CORPUS) -> Path:
    """Keep `wire`; `kind` says what it did ("abort", "hang", "stall", "kop-died")."""
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(wire).hexdigest()[:12]
    path = directory / f"{kind}-{schema_of(wire[4:])}-{digest}.bin"
    path.write_bytes(wire)
    return path


def real_frames(directory: Path = CORPUS / "seeds") -> list[bytes]:
    """Frames real clients sent (`python -m fuzz.capture_clients`), without prefixes."""
    return [wire[4:] for _, wire in load(directory)]


def load(directory: Path = CORPUS) -> list[tuple[str, bytes]]:
    """(file name, wire bytes) of every kept frame, in name order."""
    return [(p.name, p.read_bytes()) for p in sorted(directory.glob("*.bin"))]
