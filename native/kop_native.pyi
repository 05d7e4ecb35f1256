"""kop's native kernels (Rust, native/src): byte for byte the Python twins in
kop.entries.codec; see kop.entries.native.Kernels."""

def records_to_layouts(
    records: bytes,
    count: int,
    base_timestamp: int,
    first_index: int,
    max_bytes: int,
    extra: tuple[str, str] | None = None,
) -> list[tuple[bytes, int]]: ...
def records_to_framed_layouts(
    records: bytes,
    count: int,
    base_timestamp: int,
    first_index: int,
    max_bytes: int,
    extra: tuple[str, str] | None,
    versions: dict[int, int],
    tails: dict[int, bytes] | None = None,
) -> tuple[list[tuple[bytes, int, int | None]], list[int]]: ...

FRAMING_TAILS: bool
def decode_layout(
    layout: bytes, count: int, base_offset: int, publish_time: int
) -> tuple[int, int, bytes, list[tuple[int, int, int, int, int, int]], list[str]]: ...

# the rules one by one, for tests/unit/test_native_kernels.py
def _b64decode(data: bytes) -> bytes | None: ...
def _int(text: str) -> int | None: ...
def _json_headers(text: str) -> list[tuple[str, bytes | None]] | None: ...
def _json_dumps(headers: list[tuple[str, bytes | None]]) -> str: ...
