"""Fetch sessions between tenants, over the in-memory storage on a SASL listener: a
session is its principal's alone (another role, in the same tenant or another, that
presents its id is told there is no such session, and cannot close it), and every
partition of a session is authorized at every incremental fetch, so a permission
revoked in Pulsar ends the session's reads."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from kop.storage.naming import Namespace
from kop.storage.permissions import PRODUCE
from tests.gateway.test_authorization import ACME, GLOBEX, Cluster, run, two_tenants


def signed_in(c: Cluster, role: str, ns: Namespace) -> RawClient:
    client = RawClient(c.port)
    resp = client.sasl_plain(ns.path, "token:" + c.keys.token(role))
    assert resp.error_code == ErrorCode.none
    return client


def fetch(client: RawClient, session_id: int, epoch: int, *offsets: int, wait_ms: int = 0) -> Any:
    fields = RawClient.fetch_fields("t1", 0, wait_ms=wait_ms)
    parts = tuple(
        FetchPartition(partition=0, fetch_offset=o, partition_max_bytes=1 << 20) for o in offsets
    )
    fields |= {"session_id": session_id, "session_epoch": epoch}
    fields["topics"] = (FetchTopic(topic="t1", partitions=parts),) if parts else ()
    return client.request(1, 12, **fields)


def errors(resp: Any) -> list[int]:
    return [p.error_code for t in resp.responses for p in t.partitions]


def strangers(c: Cluster) -> None:
    alice = signed_in(c, "alice", ACME)
    carol, eve = signed_in(c, "carol", ACME), signed_in(c, "eve", GLOBEX)
    try:
        assert alice.produce("t1", build_batch([Record(0, 1, None, b"v")]))[0] == 0
        opened = fetch(alice, 0, 0, 0)
        sid = opened.session_id
        assert sid != 0 and errors(opened) == [ErrorCode.none]
        for other in (carol, eve):
            taken = fetch(other, sid, 1)
            assert (taken.error_code, taken.session_id) == (ErrorCode.fetch_session_id_not_found, 0)
            assert fetch(other, sid, 5).error_code == ErrorCode.fetch_session_id_not_found
            fetch(other, sid, -1)  # a full fetch naming alice's session does not close it
        mine = fetch(alice, sid, 1, 1)
        assert (mine.error_code, mine.session_id) == (ErrorCode.none, sid)
    finally:
        for client in (alice, carol, eve):
            client.close()


async def test_a_session_is_its_principals_alone(tmp_path: Path) -> None:
    async with two_tenants(tmp_path) as c:
        await run(strangers, c)


def opened(c: Cluster) -> tuple[RawClient, int]:
    """alice's session on t1, told everything there is: its next answers name nothing."""
    alice = signed_in(c, "alice", ACME)
    assert alice.produce("t1", build_batch([Record(0, 1, None, b"v")]))[0] == 0
    sid = fetch(alice, 0, 0, 0).session_id
    assert sid != 0
    assert errors(fetch(alice, sid, 1, 1)) == []
    return alice, sid


def until_refused(alice: RawClient, sid: int) -> None:
    """Incremental fetches naming nothing, until the session's partition is refused."""
    epoch, deadline = 2, time.monotonic() + 10
    while True:
        resp = fetch(alice, sid, epoch, wait_ms=50)  # an answer naming nothing waits 50 ms
        epoch += 1
        assert resp.error_code == ErrorCode.none
        if errors(resp) == [ErrorCode.topic_authorization_failed]:
            return
        assert errors(resp) == [] and time.monotonic() < deadline, "revoke not in force"


async def test_a_permission_revoked_mid_session_takes_effect(tmp_path: Path) -> None:
    async with two_tenants(tmp_path, authorization_refresh_s=0.5) as c:
        alice, sid = await run(opened, c)
        try:
            await c.backend.permissions.grant(ACME, None, "alice", frozenset({PRODUCE}))
            await run(until_refused, alice, sid)
        finally:
            alice.close()
