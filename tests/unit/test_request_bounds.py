"""No request frame can abort kop: every length is checked before kio allocates.

kio's native reader sizes an array from the count on the wire before reading
it, and Rust aborts the process when that allocation fails. Each decode here
runs in a worker process (`fuzz.isolated`), so that an abort fails the test
instead of killing pytest.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_writer

from fuzz import corpus
from fuzz.isolated import Crashed, Isolated
from fuzz.mutate import length_fields, mutate
from fuzz.seeds import all_seeds, encode, seed, supported_cases
from fuzz.targets import ALLOWED, TARGETS
from kop.protocol.bounds import Budget, FrameShapeError, check_request
from kop.protocol.messages import MalformedRequest, decode_request

CASES = supported_cases()


@pytest.fixture(scope="module")
def decoder() -> Iterator[Isolated]:
    """decode_request in a child: `check` returns when it decoded or raised kop's own
    MalformedRequest or UnsupportedVersion, and fails on anything else (another
    exception, an abort, a hang, an allocation past 1 GiB)."""
    with Isolated(TARGETS["request"], allowed=ALLOWED["request"], memory_bytes=1 << 30) as calls:
        yield calls


@pytest.mark.parametrize(
    ("name", "wire"), corpus.load(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_kept_frames_are_refused_not_fatal(decoder: Isolated, name: str, wire: bytes) -> None:
    decoder.check(wire[4:])


def test_the_issue_frame_is_an_invalid_request_of_a_known_header() -> None:
    # The JoinGroup v7 frame of issue 18: an array of ~2^35 protocols in 152 bytes.
    wire = next(w for n, w in corpus.load() if n.startswith("abort-JoinGroupRequestv7"))
    with pytest.raises(MalformedRequest) as info:
        decode_request(wire[4:])
    assert info.value.header is not None
    assert (info.value.header.api_key, info.value.header.api_version) == (11, 7)
    assert "JoinGroupRequest.protocols" in str(info.value)


def test_unguarded_kio_aborts_on_the_issue_frame() -> None:
    """The isolation works, and the bounds pass is what stands between kio and an abort."""
    wire = next(w for n, w in corpus.load() if n.startswith("abort-JoinGroupRequestv7"))
    unguarded = Isolated(TARGETS["request-unguarded"], allowed=ALLOWED["request-unguarded"])
    with unguarded, pytest.raises(Crashed, match="memory allocation"):
        unguarded.check(wire[4:])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES), correlation=st.integers(0, 2**31 - 1), body=st.binary(max_size=300)
)
def test_arbitrary_bytes_after_a_header_decode_or_raise_kops_error(
    decoder: Isolated, case: tuple[int, int], correlation: int, body: bytes
) -> None:
    api_key, version = case
    head = api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + correlation.to_bytes(4, "big")
    decoder.check(head + body)


@settings(max_examples=200, deadline=None)
@given(frame=st.binary(max_size=200))
def test_arbitrary_frames_decode_or_raise_kops_error(decoder: Isolated, frame: bytes) -> None:
    decoder.check(frame)


_HOSTILE_I32 = [0x7FFFFFFF, -2, -(2**31), 0x10000000]
_HOSTILE_VARINTS = [b"\xff\xff\xff\xfb\x6e", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\x01"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), seed_no=st.integers(0, 2**16), data=st.data())
def test_a_hostile_length_anywhere_is_an_invalid_request(
    decoder: Isolated, case: tuple[int, int], seed_no: int, data: st.DataObject
) -> None:
    frame = seed(*case, random.Random(seed_no)).frame
    fields = length_fields(frame)
    if not fields:  # ApiVersions v0-2, ListGroups v0-3: nothing to lie about
        return
    pos, form = data.draw(st.sampled_from(fields))
    out = bytearray(frame)
    if form == "i32":
        value = data.draw(st.sampled_from(_HOSTILE_I32))
        out[pos : pos + 4] = value.to_bytes(4, "big", signed=True)
    elif form == "i16":
        out[pos : pos + 2] = (-2).to_bytes(2, "big", signed=True)
    else:
        end = pos
        while frame[end] & 0x80:
            end += 1
        out[pos : end + 1] = data.draw(st.sampled_from(_HOSTILE_VARINTS))
    assert decoder.check(bytes(out)).startswith("MalformedRequest"), frame.hex()


def test_mutants_of_every_api_and_version_never_end_the_decoder(decoder: Isolated) -> None:
    rng = random.Random(18)
    frames = [s.frame for s in all_seeds(rng)]
    for _ in range(3000):
        mutant = mutate(rng.choice(frames), rng, frames)
        decoder.check(mutant.frame)


def test_the_fuzzer_finds_kios_abort_without_the_bounds_pass() -> None:
    """A fuzzer that cannot find the known crash would prove nothing by finding none."""
    rng = random.Random(7)
    frames = [s.frame for s in all_seeds(rng)]
    with Isolated(TARGETS["request-unguarded"], allowed=ALLOWED["request-unguarded"]) as raw:
        for _ in range(2000):
            mutant = mutate(rng.choice(frames), rng, frames)
            try:
                raw.check(mutant.frame)
            except Crashed as died:
                assert "memory allocation" in str(died), str(died)[-500:]
                return
    pytest.fail("no abort in 2000 mutants of unguarded kio")


def _metadata_v1(topics: int) -> bytes:
    schema = load_request_schema(3, 1)
    topic = schema.__dataclass_fields__["topics"].type.__args__[0].__args__[0]
    body = schema(topics=tuple(topic(name="t") for _ in range(topics)))
    header = schema.__header_schema__
    out = io.BytesIO()
    entity_writer(header)(
        out, header(request_api_key=3, request_api_version=1, correlation_id=1, client_id=None)
    )
    entity_writer(schema)(out, body)
    return out.getvalue()


def test_array_elements_of_one_request_are_bounded() -> None:
    schema = load_request_schema(3, 1)
    within = _metadata_v1(1000)
    check_request(schema.__header_schema__, schema, within, Budget(1000))
    with pytest.raises(FrameShapeError, match="too many array elements"):
        check_request(schema.__header_schema__, schema, _metadata_v1(1001), Budget(1000))


def test_length_map_names_every_length_of_a_frame() -> None:
    # Metadata v1 of two topics: the topics array count, then each name's length.
    frame = _metadata_v1(2)
    header_end = 2 + 2 + 4 + 2  # key, version, correlation id, null client id
    assert length_fields(frame) == [
        (8, "i16"),
        (header_end, "i32"),
        (header_end + 4, "i16"),
        (header_end + 7, "i16"),
    ]


def test_null_array_where_the_schema_has_none_is_an_invalid_request() -> None:
    # A SyncGroup v5 whose assignments array is null: kio hands over None, and the
    # handler, iterating it, failed; Kafka's reader refuses it as INVALID_REQUEST.
    body = load_request_schema(14, 5)(
        group_id="g",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(),
    )
    frame = bytearray(encode(14, 5, body, 1, None))
    # The empty array is the varint 0x01 just before the body's tagged-field count.
    assert frame[-2:] == b"\x01\x00"
    frame[-2] = 0x00  # null
    with pytest.raises(MalformedRequest, match="null array"):
        decode_request(bytes(frame))


def test_null_array_where_the_schema_allows_it_decodes() -> None:
    # Metadata's topics: null asks for every topic.
    body = load_request_schema(3, 12)(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    assert decode_request(encode(3, 12, body, 1, None)).body.topics is None
