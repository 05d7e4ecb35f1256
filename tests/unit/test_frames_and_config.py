"""Frames announce their size; oversized frames and bad configs fail clearly."""

from __future__ import annotations

import datetime
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.api_versions.v4.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import (
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from kop.config.settings import ConfigError, KopConfig, load_config
from kop.protocol.frame_pieces import PIECE_FROM, joined, records_of
from kop.protocol.frames import PREFIX_BYTES, FrameTooLarge, encode_frame, frame_size
from kop.protocol.messages import RequestHeader, encode_response, encode_response_frame


@given(payload=st.binary(max_size=2048))
def test_frame_prefix_announces_the_payload(payload: bytes) -> None:
    frame = encode_frame(payload)
    assert frame_size(frame[:PREFIX_BYTES], 2048) == len(payload)
    assert frame[PREFIX_BYTES:] == payload


@given(records=st.binary(max_size=3 * PIECE_FROM), correlation=st.integers(0, 2**31 - 1))
def test_an_answer_frame_is_its_size_then_its_header_and_body(
    records: bytes, correlation: int
) -> None:
    """The frame kop sends (its size written in place) is the size prefix and the
    response exactly as encoded on its own."""
    answer = ApiVersionsResponse(
        error_code=ErrorCode.none, api_keys=(), throttle_time=i32Timedelta.parse(
            datetime.timedelta(0)), supported_features=(), finalized_features_epoch=i64(-1),
        finalized_features=(), zk_migration_ready=False,
    ) if not records else FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
        session_id=i32(0), responses=(FetchableTopicResponse(topic=TopicName("t"), partitions=(
            PartitionData(partition_index=i32(0), error_code=ErrorCode.none,
                          high_watermark=i64(0), aborted_transactions=None, records=records),
        )),),
    )  # fmt: skip
    header = RequestHeader(1 if records else 18, 4, correlation, None)
    frame = encode_response_frame(header, answer)
    assert joined(frame) == encode_frame(encode_response(header, answer))
    if len(records) >= PIECE_FROM:  # a Fetch answer's records are sent as handed over
        assert isinstance(frame, list) and any(piece is records for piece in frame)


def _fetch_answer(records: Any) -> FetchResponse:
    return FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
        session_id=i32(0), responses=(FetchableTopicResponse(topic=TopicName("t"), partitions=(
            PartitionData(partition_index=i32(0), error_code=ErrorCode.none,
                          high_watermark=i64(0), aborted_transactions=None, records=records),
        )),),
    )  # fmt: skip


@given(pieces=st.lists(st.binary(max_size=2 * PIECE_FROM), max_size=6))
def test_records_in_pieces_are_sent_as_the_joined_records_would_be(pieces: list[bytes]) -> None:
    """A fetch of several entries hands their batches over unjoined (`records_of`):
    the frame's bytes are those of the joined records, the large ones not copied."""
    header = RequestHeader(1, 12, 7, None)
    frame = encode_response_frame(header, _fetch_answer(records_of(pieces)))
    whole = b"".join(pieces)
    assert joined(frame) == encode_frame(encode_response(header, _fetch_answer(whole)))
    sent = frame if isinstance(frame, list) else [frame]
    for piece in pieces:
        if len(piece) >= PIECE_FROM:
            assert any(p is piece for p in sent)


@pytest.mark.parametrize("size", [2049, -1, 2**31 - 1])
def test_frame_size_outside_limit_is_refused_before_buffering(size: int) -> None:
    with pytest.raises(FrameTooLarge):
        frame_size(struct.pack(">i", size), 2048)


def test_precedence_is_file_then_env_then_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "kop.toml"
    cfg.write_text('port = 9100\nnamespace = "from-file"\ntenant = "t-file"\n')
    monkeypatch.setenv("KOP_NAMESPACE", "from-env")
    monkeypatch.setenv("KOP_TENANT", "t-env")
    config = load_config(cfg, tenant="t-flag")
    assert config.port == 9100
    assert config.namespace == "from-env"
    assert config.tenant == "t-flag"


def test_a_config_file_is_read_by_its_own_load_only(tmp_path: Path) -> None:
    """A later config built in the same process (a second gateway, a test's) does not
    pick up the file an earlier load read: it once did, through a module global."""
    cfg = tmp_path / "kop.toml"
    cfg.write_text('namespace = "from-file"\n')
    assert load_config(cfg).namespace == "from-file"
    assert KopConfig().namespace == "default"
    assert load_config().namespace == "default"


def test_bad_values_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOP_PORT", "70000")
    with pytest.raises(ConfigError, match="port"):
        load_config()


def test_bad_pulsar_url_is_explained() -> None:
    with pytest.raises(ConfigError, match=r"pulsar_service_url.*pulsar://"):
        load_config(pulsar_service_url="http://nope")


def test_unknown_setting_in_file_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "kop.toml"
    cfg.write_text("no_such_thing = 1\n")
    with pytest.raises(ConfigError, match="no_such_thing"):
        load_config(cfg)


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("limits", "problem"),
    [
        ({"default_partitions": 8, "max_partitions_per_topic": 4}, "default_partitions=8"),
        ({"max_partitions_per_topic": 50, "max_partitions_total": 40}, "max_partitions_total=40"),
        ({"max_partitions_total": 0}, "max_partitions_total"),
        ({"fetch_max_bytes_cap": 10}, "fetch_max_bytes_cap"),
        ({"group_max_size": 0}, "group_max_size"),
        ({"max_groups": 0}, "max_groups"),
    ],
)
def test_limits_that_cannot_hold_stop_kop_with_one_line(
    limits: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config(**limits)


def test_a_decompression_bound_below_the_largest_batch_is_refused() -> None:
    """A batch of max_message_bytes that does not compress at all must still fit."""
    with pytest.raises(ConfigError, match="max_uncompressed_batch_bytes"):
        load_config(max_message_bytes=4 << 20, max_uncompressed_batch_bytes=2 << 20)
    with pytest.raises(ConfigError, match="max_uncompressed_entry_bytes"):
        load_config(max_uncompressed_entry_bytes=1000)
    config = load_config(max_message_bytes=4 << 20, max_uncompressed_batch_bytes=4 << 20)
    assert config.max_uncompressed_entry_bytes == 64 << 20
