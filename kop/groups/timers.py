"""The coordinator's timeouts, per group: member ids handed out but never used,
sessions without heartbeats, the join deadline (the longest rebalance timeout,
or the initial delay) and the sync deadline."""

from __future__ import annotations

from kop.groups.group import NEW_MEMBER_JOIN_TIMEOUT_MS, Group
from kop.groups.rebalance import Rebalancer


def fire(g: Group, rebalance: Rebalancer, now_ms: int) -> None:
    """Everything due by `now_ms`."""
    for member_id, expires in list(g.pending.items()):
        if now_ms >= expires:
            del g.pending[member_id]
            rebalance.maybe_complete_join(g, now_ms)
    for m in list(g.members.values()):
        if not m.alive_at(now_ms):
            rebalance.remove_member(g, m.member_id, now_ms)
    if g.join_deadline_ms is not None and now_ms >= g.join_deadline_ms:
        rebalance.join_deadline(g, now_ms)
    if g.sync_deadline_ms is not None and now_ms >= g.sync_deadline_ms:
        _sync_timed_out(g, rebalance, now_ms)


def _sync_timed_out(g: Group, rebalance: Rebalancer, now_ms: int) -> None:
    """Members that did not sync within the rebalance timeout are dropped (as
    Kafka 3.0+ does with members pending sync) and the group rebalances without them."""
    g.sync_deadline_ms = None
    for member_id in [m.member_id for m in g.members.values() if m.sync_token is None]:
        g.remove(member_id)
    rebalance.prepare(g, now_ms)
    rebalance.maybe_complete_join(g, now_ms)
    if not g.members:
        rebalance.complete_join(g, now_ms)


def deadlines(g: Group) -> list[int]:
    """When `fire` next has something to do for this group."""
    out = [t for t in (g.join_deadline_ms, g.sync_deadline_ms) if t is not None]
    out += g.pending.values()
    for m in g.members.values():
        if m.join_token is not None:
            if m.is_new:
                out.append(m.last_seen_ms + NEW_MEMBER_JOIN_TIMEOUT_MS)
        elif m.sync_token is None:
            out.append(m.last_seen_ms + m.session_timeout_ms)
    return out
