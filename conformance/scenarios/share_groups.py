"""KIP-932 share groups through Kafka's own tools, judged by Kafka 4.3.1: a console share
consumer joins, takes what is produced once it is in, and leaves; kafka-share-groups
lists, describes and deletes the group."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from conformance.clients.java_tools import JavaTools, Running
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


@scenario("tools/share-groups", JAVA, quick=True)
def share_groups(ctx: Ctx, tools: JavaTools) -> Observation:
    """A share group starts at the end of the partition (share.auto.offset.reset=latest)
    when its member first fetches: markers are produced until the member prints one, so
    the ten values produced after are all the group's."""
    topic, group = ctx.name("sh-topic"), ctx.name("sh")
    create_topic(ctx.bootstrap, topic)
    g = ["--group", group]
    consumer = Running(ctx, "console-share-consumer", *_bs(ctx), "--topic", topic, *g)
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
        members = tools.run(ctx, "share-groups", *_bs(ctx), "--describe", "--members", *g)
    finally:
        ended = consumer.stop()
    values = [line for line in ended.out if re.fullmatch(r"v\d", line)]
    state: list[str] = []

    def emptied() -> bool:
        """A member that left is gone at once; one whose leave did not reach the
        coordinator (a close cut short) is gone after the session timeout, on either."""
        nonlocal state
        state = [_NODE.sub("(<node>)", line) for line in tools.run(
            ctx, "share-groups", *_bs(ctx), "--describe", "--state", *g).out]  # fmt: skip
        return any(" Empty " in line for line in state)

    _until("the group empties", 75, emptied)
    return {
        "values": sorted(values),
        "members": [_MEMBER.sub("<member>", line) for line in members.out],
        "list": _listed(ctx, tools, group),
        "state": state,
        "delete": tools.run(ctx, "share-groups", *_bs(ctx), "--delete", *g).__dict__,
        "after delete": _listed(ctx, tools, group),
    }  # fmt: skip
