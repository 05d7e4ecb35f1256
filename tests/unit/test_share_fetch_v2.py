"""What ShareFetch and ShareAcknowledge v2 ask of a request before any record is touched
(kop/api/share_fetch.py), as Kafka 4.3's KafkaApis checks it: a fetch that renews locks
asks for nothing; a RENEW needs version 2 and the request's IsRenewAck; batches go
forward; an acquire mode is one Kafka defines."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.share_fetch.v2.request import ShareFetchRequest
from kio.schema.types import GroupId
from kio.static.primitive import i8, i32, i32Timedelta

from kop.api.context import RequestContext
from kop.api.routes import Now
from kop.api.share_fetch import _AckRules, _invalid, share_fetch
from kop.groups.share.records import AckBatch, AckType
from kop.protocol.errors import ErrorCode
from kop.storage.naming import Namespace
from tests.gateway.test_share_session_ends import _services

RENEW, ACCEPT = AckType.RENEW, AckType.ACCEPT


def _fetch(**fields: object) -> ShareFetchRequest:
    base: dict[str, object] = dict(
        group_id=GroupId("g"), member_id="m", share_session_epoch=i32(0),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(0), max_bytes=i32(0),
        max_records=i32(0), batch_size=i32(10), topics=(), forgotten_topics_data=(),
        is_renew_ack=True,
    )  # fmt: skip
    return ShareFetchRequest(**{**base, **fields})  # type: ignore[arg-type]


async def _answer(request: ShareFetchRequest) -> tuple[ErrorCode, str | None]:
    services = await _services()
    phase = await share_fetch(
        services, RequestContext(Namespace("public", "default"), "c", 2), request
    )
    assert isinstance(phase, Now)  # refused before anything is looked up
    return phase.answer.error_code, phase.answer.error_message


async def test_a_fetch_that_renews_must_ask_for_nothing() -> None:
    code, message = await _answer(_fetch(max_records=i32(500), max_bytes=i32(1 << 20)))
    assert code == ErrorCode.invalid_request
    assert (
        message == "maxBytes must be set to 0, maxRecords must be set to 0, if isRenewAck is true."
    )


async def test_an_unknown_acquire_mode_is_refused() -> None:
    code, _ = await _answer(_fetch(is_renew_ack=False, share_acquire_mode=i8(2)))
    assert code == ErrorCode.invalid_request


@pytest.mark.parametrize(
    ("batches", "rules", "refused"),
    [
        ([AckBatch(0, 0, (RENEW,))], _AckRules(True, True), False),
        ([AckBatch(0, 0, (RENEW,))], _AckRules(False, False), True),  # v1: no RENEW
        ([AckBatch(0, 0, (RENEW,))], _AckRules(True, False), True),  # not flagged
        ([AckBatch(0, 1, (ACCEPT, RENEW))], _AckRules(True, True), False),
        ([AckBatch(5, 6, (ACCEPT,)), AckBatch(2, 3, (ACCEPT,))], _AckRules(True, True), True),
        ([AckBatch(3, 2, (ACCEPT,))], _AckRules(True, True), True),
        ([AckBatch(0, 2, (ACCEPT, ACCEPT))], _AckRules(True, True), True),
        ([AckBatch(0, 0, ())], _AckRules(True, True), True),
        ([AckBatch(0, 0, (5,))], _AckRules(True, True), True),
    ],
)
def test_acknowledgement_batches_are_checked_as_kafka_checks_them(
    batches: list[AckBatch], rules: _AckRules, refused: bool
) -> None:
    error = _invalid(batches, rules)
    assert (error is not None) == refused
    assert error is None or error.code == ErrorCode.invalid_request
