"""One request names topics of at most `max_namespaces_per_request` namespaces besides
the connection's own (issue 33, finding 6): before, a Metadata request naming 12,000
made-up namespaces by full names cost 12,000 policy look-ups against Pulsar. The
topics past the bound are answered INVALID_REQUEST, the rest as usual."""

from __future__ import annotations

from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from kop.api import metadata
from kop.api.context import RequestContext
from kop.protocol.errors import ErrorCode
from kop.security.authorizer import TopicOp
from kop.storage.naming import Namespace, PulsarTopic
from tests.unit.test_partition_limits import NS, _services


class _CountingAccess:
    """Allows everything, and notes which namespaces a permission was asked for (each
    a Pulsar policy look-up with authorization on)."""

    def __init__(self) -> None:
        self.asked: set[Namespace] = set()

    async def topic(self, topic: PulsarTopic, op: TopicOp) -> bool:
        self.asked.add(topic.namespace)
        return True

    async def group(self, ns: Namespace, group: str) -> bool:
        return True

    async def group_topic(self, topic: PulsarTopic, group: str) -> bool:
        return True

    async def idempotent_write(self, ns: Namespace) -> bool:
        return True

    async def namespace_use(self, ns: Namespace) -> bool:
        return True

    async def cluster(self) -> bool:
        return True

    async def tenant_admin(self, ns: Namespace) -> bool:
        return True


async def test_a_request_names_a_bounded_number_of_other_namespaces() -> None:
    services = await _services()
    access = _CountingAccess()
    ctx = RequestContext(NS, "test", 12, access=access, max_namespaces=100)
    own = [MetadataRequestTopic(topic_id=None, name=f"mine-{i}") for i in range(5)]
    made_up = [
        MetadataRequestTopic(topic_id=None, name=f"persistent://t{i}/ns/x") for i in range(150)
    ]
    request = MetadataRequest(
        topics=tuple(own + made_up), allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )  # fmt: skip
    answer = (await metadata.handle(services, ctx, request)).answer
    codes = [t.error_code for t in answer.topics]
    assert codes[:5] == [ErrorCode.unknown_topic_or_partition] * 5  # its own: as before
    assert codes[5:105] == [ErrorCode.unknown_topic_or_partition] * 100
    assert codes[105:] == [ErrorCode.invalid_request] * 50
    assert len(access.asked - {NS}) == 100
