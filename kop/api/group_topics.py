"""The topics a group's subscriptions name, as a member's principal sees them: what
the KIP-848 and share groups' heartbeats and a classic member of a KIP-848 group
resolve their subscribed names and regular expressions into (only the tenant's
topics the principal may describe, never internal ones, at most MAX_REGEX_MATCHES
for one regex)."""

from __future__ import annotations

import asyncio

from kop.api.context import RequestContext, Services, topic_for
from kop.api.internal_topics import is_internal
from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.requests import Resolved
from kop.groups.consumer.topic_regex import InvalidRegex, compile_pattern, matching_topics
from kop.protocol.errors import KafkaError
from kop.security.authorizer import TopicOp

MAX_REGEX_MATCHES = 10_000  # topics one regex may bring into a group


async def resolved(
    services: Services, ctx: RequestContext, names: set[str], regexes: set[str]
) -> Resolved:
    """The topics of the tenant that `names` and `regexes` name now, among those the
    principal may describe."""
    matches: dict[str, tuple[str, ...]] = {}
    if regexes:
        listed = [n for n in await services.catalog.names(ctx.namespace) if not is_internal(n)]
        for regex in sorted(regexes):
            try:
                found = await matching_topics(compile_pattern(regex), listed, MAX_REGEX_MATCHES)
            except InvalidRegex:
                found = []
            matches[regex] = tuple(found)
    wanted = sorted(names.union(*matches.values()))
    views = await asyncio.gather(*(_view(services, ctx, n) for n in wanted))
    return Resolved({v.name: v for v in views if v is not None}, matches)


async def _view(services: Services, ctx: RequestContext, name: str) -> TopicMeta | None:
    if is_internal(name):
        return None
    try:
        topic = topic_for(ctx, name)
        if not await ctx.access.topic(topic, TopicOp.DESCRIBE):
            return None
        view = await services.catalog.describe(topic)
    except KafkaError:
        return None
    return None if view is None else TopicMeta(view.topic_id, name, view.partitions)
