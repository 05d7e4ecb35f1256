"""A partitioned topic made with its properties is one request to Pulsar: nobody sees it
without them. kop's state topics carry their ids as properties (issue 33); made first
and given them after, an instance starting at the same moment read the topic without
an id, gave it one of its own, and the first instance then took its topic for replaced."""

from __future__ import annotations

import uuid

from kop.pulsar.admin import PulsarAdmin
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import AdminError
from tests.integration.conftest import PULSAR_HTTP
from tests.integration.observe import dedup_namespace


async def test_a_topic_is_made_with_its_properties_in_one_request(pulsar: str) -> None:
    admin = PulsarAdmin(PULSAR_HTTP)
    seen: list[tuple[str, object]] = []
    request = admin._http.request

    async def recording(method: str, path: str, *args: object, **kwargs: object) -> object:
        seen.append((method, path))
        return await request(method, path, *args, **kwargs)  # type: ignore[arg-type]

    admin._request = recording  # type: ignore[method-assign]
    try:
        with dedup_namespace("props") as ns:
            tenant, name = ns.split("/")
            topic = PulsarTopic(Namespace(tenant, name), f"p-{uuid.uuid4().hex[:8]}", "")
            await admin.create_partitioned(topic, 3, {"kop.state-id": "abc"})
            assert [m for m, _ in seen] == ["PUT"]
            info = await admin.topic_info(topic)
            assert info is not None
            assert (info.partitions, info.properties) == (3, {"kop.state-id": "abc"})
            try:
                await admin.create_partitioned(topic, 3, {"kop.state-id": "other"})
                raise AssertionError("a second create was taken")
            except AdminError as exc:
                assert exc.status == 409
            again = await admin.topic_info(topic)
            assert again is not None and again.properties == {"kop.state-id": "abc"}
    finally:
        await admin.close()
