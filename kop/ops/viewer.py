"""Who is asking the admin HTTP, and what of the groups and topics they may see: with
authorization on, /v1/groups and /v1/topics need `Authorization: Bearer <JWT>` (a
token of the key Kafka clients' tokens are checked with), and show that role only the
groups and topics its Pulsar permissions let it use; superusers see everything.
Whether the asker may see more than /healthz and /readyz at all is
`kop.ops.admin_access`'s to say, before this."""

from __future__ import annotations

from aiohttp import web

from kop.groups.scope import GroupScope
from kop.security.authorizer import Access, Authorizer, TopicOp
from kop.security.errors import AuthenticationFailed
from kop.security.principal import Principal
from kop.security.tokens import TokenValidator
from kop.storage.naming import InvalidTopicName, PulsarTopic, resolve

_PARTITION = "-partition-"


class Unauthorized(Exception):
    pass


class Viewer:
    def __init__(
        self, authorizer: Authorizer, tokens: TokenValidator | None, scope: GroupScope
    ) -> None:
        self._authorizer = authorizer
        self._tokens = tokens
        self._scope = scope

    def access(self, request: web.Request) -> Access:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("a token is needed: Authorization: Bearer <JWT>")
        if self._tokens is None:
            raise Unauthorized("no token key is configured (auth_token_secret_key)")
        try:
            role = self._tokens.validate(token.strip()).role
        except AuthenticationFailed:
            raise Unauthorized("the token is not accepted") from None
        return self._authorizer.bind(Principal(role, self._scope.default, "TOKEN"))

    async def may_see_group(self, access: Access, key: str) -> bool:
        ns, group = self._scope.split(key)
        return await access.group(ns, group)

    async def may_see_partition(self, access: Access, partition_topic: str) -> bool:
        base = partition_topic.rsplit(_PARTITION, 1)[0]
        try:
            topic: PulsarTopic = resolve(base, self._scope.default)
        except InvalidTopicName:
            return False
        return await access.topic(topic, TopicOp.DESCRIBE)
