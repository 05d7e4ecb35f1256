"""ListTransactions v2's `transactional_id_pattern` (KIP-1152) through a real listener
(over the in-memory storage): matched by RE2 as Kafka's RE2/J `matches()` does (the
whole id), so a pattern that makes a backtracking engine run for ages is answered at
once; a pattern RE2 refuses, or one longer than MAX_PATTERN_CHARS, is Kafka's
INVALID_REGULAR_EXPRESSION with nothing listed."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

import pytest

from conformance.clients.raw import RawClient
from kop.api.patterns import MAX_PATTERN_CHARS, compile_client_pattern
from kop.protocol.errors import ErrorCode, KafkaError
from tests.gateway.memory_gateway import gateway_with_hot_topic

# `(a+)+` backtracks exponentially on a run of a's that fails at its end: 25 of them
# held Python's `re` for 2.4 s; each one more doubles it, so 40 never ends.
EVIL = "(a+)+"
STUCK = "a" * 40 + "!"
LONG_AS = "a" * 20_000
IDS = ["orders-1", "orders-2", "my-orders-1", STUCK, LONG_AS, "a" * 30]


def _init(client: RawClient, txn_id: str) -> None:
    """InitProducerId, retried while the coordinator loads (a fresh gateway's does)."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.request(
            22, 4, transactional_id=txn_id, transaction_timeout=datetime.timedelta(seconds=60)
        )
        if answer.error_code != ErrorCode.coordinator_load_in_progress:
            break
        assert time.monotonic() < deadline, "the coordinator never loaded"
        time.sleep(0.05)
    assert answer.error_code == ErrorCode.none, (txn_id[:20], answer.error_code)


def _listed(client: RawClient, pattern: str | None) -> tuple[ErrorCode, list[str]]:
    answer: Any = client.request(66, 2, transactional_id_pattern=pattern)
    ids = sorted(str(t.transactional_id) for t in answer.transaction_states)
    return answer.error_code, ids


# A hang (the event loop stuck in a backtracking match) fails here instead of at the
# suite's 300 s.
@pytest.mark.timeout(120)
async def test_patterns_match_whole_ids_in_linear_time() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _):
        client = RawClient(gateway.kafka_port)

        def run() -> dict[str | None, tuple[ErrorCode, list[str]]]:
            for txn_id in IDS:
                _init(client, txn_id)
            return {p: _listed(client, p) for p in [EVIL, "orders-.*", "", None, "a{30}"]}

        found = await asyncio.to_thread(run)
        client.close()
    assert found[EVIL] == (ErrorCode.none, sorted([LONG_AS, "a" * 30]))
    # The whole id, not a part of it: "my-orders-1" contains a match but is not one.
    assert found["orders-.*"] == (ErrorCode.none, ["orders-1", "orders-2"])
    assert found["a{30}"] == (ErrorCode.none, ["a" * 30])
    assert found[""] == found[None] == (ErrorCode.none, sorted(IDS))  # no filter


@pytest.mark.parametrize(
    "pattern",
    [
        "[",  # not an expression at all
        "(?=orders)orders-1",  # look-ahead: Python's re takes it, RE2 (and RE2/J) do not
        r"(o)\1rders-1",  # a backreference
        "a{1001}",  # past RE2's repetition limit
        "orders-1|" + "x" * MAX_PATTERN_CHARS,  # too long, though it would match
    ],
)
async def test_refused_patterns_are_invalid_regular_expression(pattern: str) -> None:
    async with gateway_with_hot_topic(1) as (gateway, _):
        client = RawClient(gateway.kafka_port)

        def run() -> Any:
            _init(client, "orders-1")
            return client.request(66, 2, state_filters=("Nope",), transactional_id_pattern=pattern)

        answer = await asyncio.to_thread(run)
        client.close()
    assert answer.error_code == ErrorCode.invalid_regular_expression
    assert list(answer.transaction_states) == []
    assert list(answer.unknown_state_filters) == []  # Kafka's error answer: nothing else


def test_the_longest_pattern_allowed_compiles() -> None:
    pattern = "orders-1|" + "x" * (MAX_PATTERN_CHARS - len("orders-1|"))
    assert compile_client_pattern(pattern).fullmatch("orders-1")
    with pytest.raises(KafkaError) as refused:
        compile_client_pattern(pattern + "x")
    assert refused.value.code == ErrorCode.invalid_regular_expression
