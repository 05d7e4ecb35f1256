"""Consumer groups: a member commits and leaves, the next one resumes there."""

from __future__ import annotations

from typing import Any

from conformance.clients import LIBRARIES
from conformance.members import Member, settle
from conformance.model import Ctx, Observation, Rec, scenario
from conformance.setup import create_topic


@scenario("groups/commit-resume", LIBRARIES, quick=True)
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


@scenario("groups/join-leave", LIBRARIES, quick=True)
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
