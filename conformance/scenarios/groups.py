"""Consumer groups: a member commits and leaves, the next one resumes there."""

from __future__ import annotations

import functools
import subprocess
import sys
from typing import Any

from conformance.clients import LIBRARIES
from conformance.clients.base import until
from conformance.members import Member, settle
from conformance.model import Ctx, Observation, Rec, scenario
from conformance.setup import create_topic, drop_topics

# Group scenarios take 10-30 s per client (joins wait group.initial.rebalance.delay.ms):
# the quick tier runs them with librdkafka and franz-go; the full matrix with every client.
QUICK_GROUPS = ("confluent-kafka", "franz-go")


@scenario("groups/commit-resume", LIBRARIES, quick=QUICK_GROUPS)
def commit_resume(ctx: Ctx, client: Any) -> Observation:
    """subscribe(), read 6 of 10 records, commit, leave; a new member of the group gets
    exactly the other 4; the committed offset reads back."""
    topic, group = ctx.name("grp-topic"), ctx.name("grp")
    create_topic(ctx.bootstrap, topic)
    client.produce(ctx.bootstrap, topic, [Rec(None, f"v{i}".encode()) for i in range(10)])
    before = client.committed(ctx.bootstrap, group, topic, 0)
    first = client.group_consume(ctx.bootstrap, topic, group, 6)
    committed = client.committed(ctx.bootstrap, group, topic, 0)
    second = client.group_consume(ctx.bootstrap, topic, group, 4)
    return {
        "committed before": before,
        "first member": [r.offset for r in first],
        "committed": committed,
        "second member": [r.offset for r in second],
        "committed after": client.committed(ctx.bootstrap, group, topic, 0),
    }


@scenario("groups/join-leave", LIBRARIES, quick=QUICK_GROUPS)
def join_leave(ctx: Ctx, client: Any) -> Observation:
    """On a 4-partition topic: one member gets every partition; a second joins and
    they split them; the first leaves cleanly and the second gets them all again."""
    topic, group = ctx.name("jl-topic"), ctx.name("jl")
    create_topic(ctx.bootstrap, topic, 4)
    first = Member(client.member_loop, ctx.bootstrap, topic, group)
    out: dict[str, Any] = {"alone": settle([first], 4)}
    second = Member(client.member_loop, ctx.bootstrap, topic, group)
    both = settle([first, second], 4)
    out["two members"] = sorted(both) if isinstance(both, list) else both
    first.leave()
    out["after the first left"] = settle([second], 4)
    second.leave()
    return out


@scenario("groups/static-restart", ("confluent-kafka",))
def static_restart(ctx: Ctx, client: Any) -> Observation:
    """Two static members (group.instance.id, KIP-345); one closes (a static member
    does not leave) and comes back within its session timeout: it gets its old
    partitions back and the other member's are never revoked."""
    topic, group = ctx.name("st-topic"), ctx.name("st")
    create_topic(ctx.bootstrap, topic, 4)
    revoked: list[list[int]] = []

    def static(instance: str, **extra: Any) -> Member:
        loop = functools.partial(
            client.member_loop, **{"group.instance.id": instance, "session.timeout.ms": 30000},
            **extra,
        )  # fmt: skip
        return Member(loop, ctx.bootstrap, topic, group)

    a, b = static("a"), static("b", revoked=revoked)
    before = settle([a, b], 4)
    a.leave()
    again = static("a")
    after = settle([again, b], 4)
    during = [r for r in revoked if r]  # before b itself closes
    b.leave()
    again.leave()
    return {"before": before, "after": after, "revoked from b meanwhile": during}


@scenario("groups/cooperative-sticky", ("confluent-kafka",))
def cooperative_sticky(ctx: Ctx, client: Any) -> Observation:
    """partition.assignment.strategy=cooperative-sticky: when a second member joins,
    the first gives up only the partitions that move (an incremental rebalance)."""
    return _a_second_member_joins(
        ctx, client, "coop", {"partition.assignment.strategy": "cooperative-sticky"}
    )


_CRASHING_MEMBER = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "session.timeout.ms": 6000, "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("assigned", flush=True)
"""


@scenario("groups/crash", ("confluent-kafka",))
def crash(ctx: Ctx, client: Any) -> Observation:
    """A member killed with SIGKILL never leaves: once its session (6 s) times out,
    the other member gets its partitions."""
    topic, group = ctx.name("crash-topic"), ctx.name("crash")
    create_topic(ctx.bootstrap, topic, 4)
    doomed = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_MEMBER, ctx.bootstrap, group, topic],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert doomed.stdout is not None
        doomed.stdout.readline()  # it has partitions
        survivor = Member(
            functools.partial(client.member_loop, **{"session.timeout.ms": 6000}),
            ctx.bootstrap, topic, group,
        )  # fmt: skip
        shared = until("two members share the topic", 60, lambda: _has_some(survivor, 4))
        doomed.kill()
        alone = settle([survivor], 4, within=60)
        survivor.leave()
    finally:
        doomed.kill()
        doomed.wait(10)
    return {"survivor's share before": shared, "survivor after the crash": alone}


def _has_some(member: Member, total: int) -> int | None:
    n = len(member.assigned)
    return n if 0 < n < total else None


@scenario("groups/deleted-topic-offsets", ("confluent-kafka",))
def deleted_topic_offsets(ctx: Ctx, client: Any) -> Observation:
    """A group reads a topic and commits; the topic is deleted and created again under
    the same name: the group's offsets went with the topic, so a member reads the new
    topic from its start (nothing skipped at an offset of the old topic)."""
    topic, group = ctx.name("del-topic"), ctx.name("del")
    create_topic(ctx.bootstrap, topic)
    client.produce(ctx.bootstrap, topic, [Rec(None, f"old{i}".encode()) for i in range(6)])
    first = client.group_consume(ctx.bootstrap, topic, group, 6)
    before = client.committed(ctx.bootstrap, group, topic, 0)
    drop_topics(ctx.bootstrap, [topic])
    until("the topic made again", 60, lambda: _created(ctx.bootstrap, topic))
    client.produce(ctx.bootstrap, topic, [Rec(None, f"new{i}".encode()) for i in range(3)])
    return {
        "first member": [r.offset for r in first],
        "committed before the delete": before,
        "committed after it": client.committed(ctx.bootstrap, group, topic, 0),
        "next member": [(r.offset, (r.value or b"").decode()) for r in client.group_consume(
            ctx.bootstrap, topic, group, 3)],
    }  # fmt: skip


def _created(bootstrap: str, topic: str) -> bool | None:
    """Kafka deletes a topic in the background: creating it again may be refused
    for a moment."""
    try:
        create_topic(bootstrap, topic)
    except Exception:  # TOPIC_ALREADY_EXISTS while the delete finishes
        return None
    return True


@scenario("groups/consumer-protocol", ("confluent-kafka", "franz-go"))
def consumer_protocol(ctx: Ctx, client: Any) -> Observation:
    """librdkafka's and franz-go's KIP-848 consumers (group.protocol=consumer; kgo's
    ServerSideBalancer) with the broker's assignor on a 4-partition topic: one member gets
    every partition; when a second joins the first gives up only what moves to it (two,
    incrementally); when the first leaves the second gets them all."""
    return _a_second_member_joins(
        ctx, client, "kip848", {"group.protocol": "consumer"}, then_the_first_leaves=True
    )


def _a_second_member_joins(
    ctx: Ctx, client: Any, name: str, settings: dict[str, str], then_the_first_leaves: bool = False
) -> Observation:
    """One member on a 4-partition topic, then a second: what the first held alone, whether
    they split 2/2, how many partitions were revoked from the first (an incremental
    rebalance revokes only what moves) and, if asked, what the second holds once the
    first has left."""
    topic, group = ctx.name(f"{name}-topic"), ctx.name(name)
    create_topic(ctx.bootstrap, topic, 4)
    revoked: list[list[int]] = []
    first = Member(functools.partial(client.member_loop, revoked=revoked, **settings),
                   ctx.bootstrap, topic, group)  # fmt: skip
    alone = settle([first], 4)
    second = Member(functools.partial(client.member_loop, **settings), ctx.bootstrap, topic, group)
    both = settle([first, second], 4)
    seen: dict[str, Any] = {
        "alone": alone,
        "split evenly": isinstance(both, list) and sorted(len(p) for p in both) == [2, 2],
        "partitions revoked from the first": [len(r) for r in revoked if r],
    }
    if then_the_first_leaves:
        first.leave()
        seen["after the first left"] = settle([second], 4)
        second.leave()
    else:
        second.leave()
        first.leave()
    return seen
