"""Which broker serves a topic: Pulsar's LOOKUP with its redirects."""

from __future__ import annotations

from dataclasses import dataclass

from kop.pulsar.wire.errors import ProtocolError, server_error
from kop.pulsar.wire.pool import ConnectionPool
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

_MAX_REDIRECTS = 20
_Lookup = pb.CommandLookupTopicResponse


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """Where to talk about a topic: `logical_url` is the owning broker, `physical_url`
    the address to dial (the service URL when the cluster wants us to go through its
    proxy)."""

    logical_url: str
    physical_url: str


async def lookup(pool: ConnectionPool, service_url: str, topic: str) -> BrokerAddress:
    """Asks the service URL, follows Redirects (asking the named broker next, with the
    `authoritative` flag it returned) until one says Connect. A Failed answer raises
    the broker's error (retriable or not, per its ServerError)."""
    logical = physical = service_url
    authoritative = False
    for _ in range(_MAX_REDIRECTS):
        conn = await pool.get(logical, physical)
        request_id = conn.new_request_id()
        command = pb.BaseCommand(
            type=pb.BaseCommand.LOOKUP,
            lookupTopic=pb.CommandLookupTopic(
                topic=topic, request_id=request_id, authoritative=authoritative
            ),
        )
        answer = (await conn.request(command, request_id)).lookupTopicResponse
        if answer.response == _Lookup.Failed:
            raise server_error(answer.error, f"lookup of {topic}: {answer.message}")
        broker = answer.brokerServiceUrl
        if not broker:
            raise ProtocolError(f"lookup of {topic}: no brokerServiceUrl (TLS only?)")
        logical = broker
        physical = service_url if answer.proxy_through_service_url else broker
        if answer.response == _Lookup.Connect:
            return BrokerAddress(logical, physical)
        authoritative = answer.authoritative
    raise ProtocolError(f"lookup of {topic}: more than {_MAX_REDIRECTS} redirects")
