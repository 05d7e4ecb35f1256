"""Quota entities and keys as Kafka names them, and which entity's quota applies
to a client: Kafka's precedence, most specific first.

An entity is a set of (type, name) pairs: `user` (the authenticated principal: the
Pulsar role, or ANONYMOUS), `client-id`, or both; a name of None is the default
entity of its type (`<default>` in `kafka-configs`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# In the order Kafka 4.3 answers them (its hash map's), which `kafka-configs --describe`
# prints as it gets them.
KEYS = (REQUEST_PERCENTAGE, PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)
_WHOLE = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE})  # Kafka: LONG configs
MAX_NAME = 255  # a user or client id a quota may name, in characters

# One (type, name) pair per type, sorted by type: the dictionary key of an entity.
Entity = tuple[tuple[str, str | None], ...]


class QuotaInvalid(ValueError):
    """An entity or a value Kafka (or kop) refuses: INVALID_REQUEST with this text."""


def entity(pairs: list[tuple[str, str | None]]) -> Entity:
    """The entity these (type, name) pairs name, checked as Kafka checks them."""
    types = [t for t, _ in pairs]
    if len(set(types)) != len(types):
        raise QuotaInvalid("an entity names each type at most once")
    if IP in types:
        raise QuotaInvalid(
            "kop limits client addresses with its settings (max_connections_per_ip, "
            "max_connection_creation_rate_per_ip), not with ip quotas"
        )
    if not types or not set(types) <= {USER, CLIENT_ID}:
        raise QuotaInvalid(f"entity types are {USER!r} and {CLIENT_ID!r}, not {types}")
    for _, name in pairs:
        if name is not None and not 0 < len(name) <= MAX_NAME:
            raise QuotaInvalid(f"an entity name has 1 to {MAX_NAME} characters")
    return tuple(sorted(pairs))


def check_value(key: str, value: float) -> float:
    if key == CONTROLLER_MUTATION_RATE:
        raise QuotaInvalid("kop does not throttle topic creation and deletion "
                           "(controller_mutation_rate)")  # fmt: skip
    if key == CONNECTION_CREATION_RATE:
        raise QuotaInvalid("connection_creation_rate is a quota of ip entities")
    if key not in KEYS:
        raise QuotaInvalid(f"unknown quota key {key!r}")
    if not math.isfinite(value) or value <= 0:
        raise QuotaInvalid(f"{key} must be a positive number")
    if key in _WHOLE and value != math.floor(value):
        raise QuotaInvalid(f"{key} must be a whole number of bytes a second")
    return value


@dataclass(frozen=True, slots=True)
class Applied:
    """A client's quota of one key, and who shares it: every client whose `bucket`
    is the same draws on one rate (Kafka's quota metric tags)."""

    bound: float
    bucket: tuple[str, str]


def applied(
    quotas: Mapping[Entity, Mapping[str, float]], user: str, client_id: str, key: str
) -> Applied | None:
    """The quota of `key` for this client, by Kafka's precedence (KIP-55): user and
    client id, user and default client, user, default user and client id, default
    user and default client, default user, client id, default client."""
    for (u, c), bucket in _ORDER:
        pairs: list[tuple[str, str | None]] = []
        if u != "-":
            pairs.append((USER, user if u == "u" else None))
        if c != "-":
            pairs.append((CLIENT_ID, client_id if c == "c" else None))
        value = quotas.get(tuple(sorted(pairs)), {}).get(key)
        if value is not None:
            return Applied(value, (user if bucket[0] else "", client_id if bucket[1] else ""))
    return None


# (user, client) forms in precedence order: "u" the client's name, "d" the default,
# "-" absent; and which of (user, client id) set the bucket apart.
_ORDER: tuple[tuple[tuple[str, str], tuple[bool, bool]], ...] = (
    (("u", "c"), (True, True)),
    (("u", "d"), (True, True)),
    (("u", "-"), (True, False)),
    (("d", "c"), (True, True)),
    (("d", "d"), (True, True)),
    (("d", "-"), (True, False)),
    (("-", "c"), (False, True)),
    (("-", "d"), (False, True)),
)
