"""Which broker serves a topic: Pulsar's LOOKUP with its redirects."""

from __future__ import annotations

from dataclasses import dataclass

from kop.pulsar.wire.errors import ProtocolError, PulsarWireError, server_error
from kop.pulsar.wire.pool import ConnectionPool
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.service_url import ServiceUrl

_MAX_REDIRECTS = 20
_Lookup = pb.CommandLookupTopicResponse


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """Where to talk about a topic: `logical_url` is the owning broker, `physical_url`
    the address to dial (a host of the service URL when the cluster wants us to go
    through its proxy)."""

    logical_url: str
    physical_url: str


async def lookup(pool: ConnectionPool, service: ServiceUrl, topic: str) -> BrokerAddress:
    """Asks a host of the service URL, follows Redirects (asking the named broker
    next, with the `authoritative` flag it returned) until one says Connect. Over
    TLS the brokers' TLS URLs are followed; with a listener name, that listener's.
    A Failed answer raises the broker's error (retriable or not, per its ServerError)."""
    entry = service.next_url()
    logical = physical = entry
    authoritative = False
    listener = pool.options.listener_name
    for _ in range(_MAX_REDIRECTS):
        conn = await pool.get(logical, physical)
        request_id = conn.new_request_id()
        ask = pb.CommandLookupTopic(topic=topic, request_id=request_id, authoritative=authoritative)
        if listener:
            ask.advertised_listener_name = listener
        command = pb.BaseCommand(type=pb.BaseCommand.LOOKUP, lookupTopic=ask)
        answer = (await conn.request(command, request_id)).lookupTopicResponse
        if answer.response == _Lookup.Failed:
            raise server_error(answer.error, f"lookup of {topic}: {answer.message}")
        broker = answer.brokerServiceUrlTls if service.tls else answer.brokerServiceUrl
        if not broker and answer.proxy_through_service_url:
            broker = answer.brokerServiceUrl  # only the proxy's target: it picks the port
        if not broker:
            which = "TLS URL (brokerServiceUrlTls)" if service.tls else "plaintext URL"
            on = f" on listener {listener!r}" if listener else ""
            raise PulsarWireError(f"lookup of {topic}: the broker has no {which}{on}", False)
        logical = broker
        physical = entry if answer.proxy_through_service_url else broker
        if answer.response == _Lookup.Connect:
            return BrokerAddress(logical, physical)
        authoritative = answer.authoritative
    raise ProtocolError(f"lookup of {topic}: more than {_MAX_REDIRECTS} redirects")
