"""A kop instance as the others see it, and the heartbeat that tells them."""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass


class State(enum.Enum):
    JOINING = "joining"  # learning who else is alive; owns nothing yet
    LIVE = "live"
    LEAVING = "leaving"  # handing its partitions over; owns nothing from now on


class MalformedBeat(ValueError):
    """A heartbeat that does not parse (another program wrote the topic)."""


@dataclass(frozen=True, slots=True)
class Member:
    node_id: int
    host: str  # advertised to Kafka clients
    port: int
    instance: str  # one per process: tells a restart (or a duplicate node id) apart
    state: State = State.LIVE
    # Every listener's advertised address, by name (its security protocol); `host` and
    # `port` are the first one's. Empty: one listener (heartbeats of older kops).
    listeners: tuple[tuple[str, str, int], ...] = ()

    def address(self, listener: str) -> tuple[str, int]:
        """Where a client that came in through `listener` reaches this instance: the
        same listener's address, as Kafka advertises."""
        for name, host, port in self.listeners:
            if name == listener:
                return host, port
        return self.host, self.port

    @property
    def key(self) -> str:
        """The heartbeat's partition key: compaction keeps each node's latest."""
        return str(self.node_id)

    def encode(self, proof: str = "") -> bytes:
        """The beat; `proof` (the cluster secret's signature of the beat without it)
        is added last when given."""
        body = asdict(self)
        body["state"] = self.state.value
        if not self.listeners:
            del body["listeners"]
        if proof:
            body["proof"] = proof
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, payload: bytes) -> Member:
        try:
            body = json.loads(payload)
            return cls(
                node_id=_int(body["node_id"]),
                host=str(body["host"]),
                port=_int(body["port"]),
                instance=str(body["instance"]),
                state=State(body["state"]),
                listeners=tuple(
                    (str(name), str(host), _int(port))
                    for name, host, port in body.get("listeners", ())
                ),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise MalformedBeat(f"not a kop heartbeat: {exc}") from None


def proof_of(payload: bytes) -> str:
    """The signature a beat carries ("" when it carries none)."""
    try:
        proof = json.loads(payload).get("proof", "")
    except (ValueError, AttributeError):
        return ""
    return proof if isinstance(proof, str) else ""


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    return value
