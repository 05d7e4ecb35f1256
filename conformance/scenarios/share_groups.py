"""KIP-932 share groups through Kafka's own tools, judged by Kafka 4.3.1: a console share
consumer joins, takes what is produced once it is in, and leaves; kafka-share-groups
lists, describes and deletes the group, and describes, resets and deletes its offsets."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from conformance.clients.java_tools import JavaTools, Running, java_program
from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic

JAVA = ("java-tools",)
# A member id (22 characters of URL-safe base64) differs by construction.
_MEMBER = re.compile(r"(?<![\w-])(?=[\w-]*[A-Z0-9_])[A-Za-z0-9_-]{22}(?![\w-])")
_NODE = re.compile(r"\(\d+\)")


def _bs(ctx: Ctx) -> list[str]:
    return ["--bootstrap-server", ctx.bootstrap]


def _listed(ctx: Ctx, tools: JavaTools, group: str) -> dict[str, object]:
    """`kafka-share-groups --list` narrowed to this run's group: the reference Kafka keeps
    its data between runs, so groups other runs and the share-group bench left there are
    listed too, on Kafka's side only."""
    ran = tools.run(ctx, "share-groups", *_bs(ctx), "--list")
    logical = ctx.strip(group)
    return {"code": ran.code, "out": [line for line in ran.out if line.strip() == logical]}


def _until(what: str, deadline_s: float, done: Callable[[], bool]) -> None:
    end = time.monotonic() + deadline_s
    while not done():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {deadline_s} s")
        time.sleep(0.2)


def _member_reads_ten(
    ctx: Ctx, tools: JavaTools, topic: str, group: str, while_in: Callable[[], object]
) -> tuple[int, list[str], object]:
    """A console share consumer joins; markers are produced until it prints one (the group
    starts at the end of the partition when its member first fetches:
    share.auto.offset.reset=latest), then ten values it reads; `while_in` runs before it
    leaves. How many markers were sent, the values it printed, what `while_in` gave."""
    consumer = Running(ctx, "console-share-consumer", *_bs(ctx), "--topic", topic, "--group", group)
    try:
        sent = 0

        def marked() -> bool:
            nonlocal sent
            if any(line.startswith("marker") for line in consumer.lines):
                return True
            tools.run(ctx, "console-producer", *_bs(ctx), "--topic", topic,
                      stdin=f"marker{sent}\n")  # fmt: skip
            sent += 1
            return False

        _until("the share consumer reads", 90, marked)
        tools.run(ctx, "console-producer", *_bs(ctx), "--topic", topic,
                  stdin="".join(f"v{i}\n" for i in range(10)))  # fmt: skip
        _until("ten values", 60, lambda: sum(x.startswith("v") for x in consumer.lines) >= 10)
        seen = while_in()
    finally:
        ended = consumer.stop()
    return sent, [line for line in ended.out if re.fullmatch(r"v\d", line)], seen


def _emptied(ctx: Ctx, tools: JavaTools, group: str) -> list[str]:
    """`--describe --state` once the group is Empty. A member that left is gone at once;
    one whose leave did not reach the coordinator (a close cut short) is gone after the
    session timeout, on either."""
    state: list[str] = []

    def empty() -> bool:
        nonlocal state
        ran = tools.run(ctx, "share-groups", *_bs(ctx), "--describe", "--state", "--group", group)
        state = [_NODE.sub("(<node>)", line) for line in ran.out]
        return any(" Empty " in line for line in state)

    _until("the group empties", 75, empty)
    return state


@scenario("tools/share-groups", JAVA, quick=True)
def share_groups(ctx: Ctx, tools: JavaTools) -> Observation:
    """A member reads what is produced once it is in; kafka-share-groups lists, describes
    (members, state) and deletes the group."""
    topic, group = ctx.name("sh-topic"), ctx.name("sh")
    create_topic(ctx.bootstrap, topic)
    g = ["--group", group]

    def members() -> list[str]:
        ran = tools.run(ctx, "share-groups", *_bs(ctx), "--describe", "--members", *g)
        return [_MEMBER.sub("<member>", line) for line in ran.out]

    _sent, values, described = _member_reads_ten(ctx, tools, topic, group, members)
    state = _emptied(ctx, tools, group)
    return {
        "values": sorted(values),
        "members": described,
        "list": _listed(ctx, tools, group),
        "state": state,
        "delete": tools.run(ctx, "share-groups", *_bs(ctx), "--delete", *g).__dict__,
        "after delete": _listed(ctx, tools, group),
    }  # fmt: skip


@scenario("tools/share-group-offsets", JAVA)
def share_group_offsets(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-share-groups on a group's start offsets (DescribeShareGroupOffsets,
    AlterShareGroupOffsets, DeleteShareGroupOffsets): after its member read everything,
    the start offset is the end and the lag 0; reset to the earliest, the start is 0 and
    the lag the whole partition; deleted, the group has no offsets, and deleting again, or
    for a group that does not exist, is an error. The end offset (how many markers it took
    to see the member in) is shown as <end>; once all is read, only the lag is compared."""
    topic, group = ctx.name("sho-topic"), ctx.name("sho")
    create_topic(ctx.bootstrap, topic)
    g = ["--group", group]
    sent, values, _ = _member_reads_ten(ctx, tools, topic, group, lambda: None)
    end = str(sent + 10)
    _emptied(ctx, tools, group)

    def run(*args: str) -> list[str]:
        ran = tools.run(ctx, "share-groups", *_bs(ctx), *args)
        return [" ".join("<end>" if w == end else w for w in line.split()) for line in ran.out]

    # Kafka moves a start offset past completed records lazily (in one run it said 4 of
    # 11, lag 0), kop at once: what both say is the lag.
    described = [" ".join(line.split()[:3] + line.split()[4:]) for line in run("--describe", *g)]
    reset = run("--reset-offsets", "--to-earliest", "--execute", "--topic", topic, *g)
    return {
        "values": sorted(values),
        "read all": described,
        "reset": reset,
        "after reset": run("--describe", "--verbose", *g),
        "delete": run("--delete-offsets", "--topic", topic, *g),
        "after delete": run("--describe", *g),
        "delete again": run("--delete-offsets", "--topic", topic, *g),
        "no group": run("--delete-offsets", "--topic", topic, "--group", ctx.name("nobody")),
    }  # fmt: skip


@scenario("share/renew-and-record-limit", JAVA)
def renew_and_record_limit(ctx: Ctx, _tools: JavaTools) -> Observation:
    """What ShareFetch and ShareAcknowledge v2 add, with the Java share consumer
    (tests/integration/java/ShareGroupRenew.java): in the record-limit acquire mode a
    member's first poll takes two records of a batch of six; a RENEW keeps a record's lock
    past its 15 s duration, so it is delivered once though another member fetches
    meanwhile; every record is accepted once; and a group with
    share.renew.acknowledge.enable=false refuses the renewal."""
    topic, group = ctx.name("renew"), ctx.name("renew-g")
    create_topic(ctx.bootstrap, topic, 1)
    return java_program("ShareGroupRenew", ctx.bootstrap, topic, group, "17000")


@scenario("share/reset-by-duration", JAVA)
def reset_by_duration(ctx: Ctx, _tools: JavaTools) -> Observation:
    """share.auto.offset.reset=by_duration:PT1H (tests/integration/java/
    ShareGroupByDuration.java): of three records stamped two hours ago and three stamped
    now, the group's member reads the three new ones; a negative duration is refused."""
    topic, group = ctx.name("bydur"), ctx.name("bydur-g")
    create_topic(ctx.bootstrap, topic, 1)
    return java_program("ShareGroupByDuration", ctx.bootstrap, topic, group, timeout=180)
