"""AddPartitionsToTxn's reshape (kop/api/transactions.py `_read_added`/`_write_added`):
v0-3 name the client's one transaction at the top level (v3_and_below_*), v4+ carry a
batch (KIP-890). A v0-3 request reads as a batch of that one transaction with nothing
lost, and its answer writes back at v0-3 as the version's own shape; v4-5 convert field
by field (test_versions.py leaves reshaped APIs to their routes' tests)."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.add_partitions_to_txn.v5.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from kio.schema.add_partitions_to_txn.v5.response import (
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
)
from kio.schema.types import TransactionalId
from kio.serial import entity_writer

from kop.api.dispatch import ROUTES
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey, request_schema, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade

API = ApiKey.ADD_PARTITIONS_TO_TXN
ROUTE = ROUTES[API]
PROPERTY = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


def _encoded(message: object) -> bytes:
    out = io.BytesIO()
    entity_writer(type(message))(out, message)
    return out.getvalue()


@pytest.mark.parametrize("version", range(4), ids=str)
@PROPERTY
@given(data=st.data())
def test_a_v0_3_request_reads_as_a_batch_of_its_one_transaction(
    version: int, data: st.DataObject
) -> None:
    old = data.draw(st.from_type(request_schema(API, version)))
    new = ROUTE.read(old, version)
    assert type(new) is AddPartitionsToTxnRequest
    (txn,) = new.transactions
    assert txn.transactional_id == old.v3_and_below_transactional_id
    assert txn.producer_id == old.v3_and_below_producer_id
    assert txn.producer_epoch == old.v3_and_below_producer_epoch
    assert txn.verify_only is False
    assert [(t.name, t.partitions) for t in txn.topics] == [
        (t.name, t.partitions) for t in old.v3_and_below_topics
    ]
    assert all(type(t) is AddPartitionsToTxnTopic for t in txn.topics)
    _encoded(new)


@pytest.mark.parametrize("version", range(4), ids=str)
@PROPERTY
@given(data=st.data())
def test_a_v0_3_answer_writes_its_transactions_results_at_the_top_level(
    version: int, data: st.DataObject
) -> None:
    meant = data.draw(st.from_type(response_schema(API, version)))
    answer = AddPartitionsToTxnResponse(
        throttle_time=meant.throttle_time,
        error_code=ErrorCode.none,
        results_by_transaction=(
            AddPartitionsToTxnResult(
                transactional_id=TransactionalId("tx"),
                topic_results=tuple(
                    upgrade(t, AddPartitionsToTxnTopicResult)
                    for t in meant.results_by_topic_v3_and_below
                ),
            ),
        ),
    )
    written = ROUTE.write(answer, version)
    assert written == meant
    _encoded(written)


@pytest.mark.parametrize("version", (4, 5), ids=str)
@PROPERTY
@given(data=st.data())
def test_v4_and_later_convert_field_by_field(version: int, data: st.DataObject) -> None:
    old = data.draw(st.from_type(request_schema(API, version)))
    new = ROUTE.read(old, version)
    assert type(new) is AddPartitionsToTxnRequest
    assert downgrade(new, type(old), API) == old
    meant = data.draw(st.from_type(response_schema(API, version)))
    assert ROUTE.write(upgrade(meant, AddPartitionsToTxnResponse), version) == meant


def test_more_than_one_transaction_cannot_be_answered_at_v0_3() -> None:
    one = AddPartitionsToTxnResult(transactional_id=TransactionalId("a"), topic_results=())
    answer = AddPartitionsToTxnResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results_by_transaction=(one, one)
    )
    with pytest.raises(Unrepresentable):
        ROUTE.write(answer, 3)
    assert len(ROUTE.write(answer, 4).results_by_transaction) == 2  # v4+ batches them
