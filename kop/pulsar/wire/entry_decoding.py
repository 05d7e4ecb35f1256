"""What a reader hands out for what arrived: a `RawEntry` per entry, its payload
decompressed within the bound. An entry whose payload does not decompress keeps
its place (its metadata still says how many messages it holds, so the entries
after it keep theirs) and comes with `corrupt` set and no payload."""

from __future__ import annotations

from kop.pulsar.wire.chunks import Assembled
from kop.pulsar.wire.compression import decompress
from kop.pulsar.wire.errors import CorruptEntryError
from kop.pulsar.wire.frames import Frame
from kop.pulsar.wire.message_ids import message_id
from kop.pulsar.wire.raw_entry import Position, RawEntry


def entry_of_frame(frame: Frame, max_uncompressed: int) -> RawEntry:
    """The entry a MESSAGE frame carries."""
    metadata = frame.metadata
    assert metadata is not None and frame.payload is not None
    mid = frame.command.message
    ledger, entry = message_id(mid.message_id)
    corrupt: str | None = None
    try:
        payload = decompress(metadata, frame.payload, max_uncompressed)
    except CorruptEntryError as exc:
        payload, corrupt = b"", str(exc)
    return RawEntry(
        ledger,
        entry,
        metadata,
        payload,
        mid.redelivery_count,
        frame.broker_entry_metadata,
        corrupt,
    )


def entry_of_chunks(position: Position, message: Assembled, max_uncompressed: int) -> RawEntry:
    """A chunked message, as one entry at `position` (`chunks.py`)."""
    payload, corrupt = b"", message.corrupt
    if corrupt is None:
        try:
            payload = decompress(message.metadata, message.payload, max_uncompressed)
        except CorruptEntryError as exc:
            corrupt = str(exc)
    return RawEntry(position[0], position[1], message.metadata, payload, corrupt=corrupt)
