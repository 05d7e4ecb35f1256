"""The scripted broker's producer access modes, as Pulsar 4.0.7 decides them
(`AbstractTopic.incrementTopicEpochIfNeeded`, `internalAddProducer`,
`handleProducerRemoved`; checked on a real broker, docs/design/several-instances.md
F1-F7 and docs/decisions.md D14):

- the topic's epoch (`pulsar.topic.epoch`) outlives every producer and unload;
- Shared is refused ProducerBusy while an exclusive producer holds the topic;
  Exclusive is refused ProducerFenced while any producer is attached, or when it
  brings an epoch below the topic's;
- ExclusiveWithFencing first closes every attached producer (silently: the client
  hears of it only when its next send is refused), then is refused ProducerFenced
  if it brings an epoch below the topic's; otherwise it holds the topic with the
  epoch it brought, or one more;
- a name still attached on a live connection (a closed producer waits for its
  writes before it goes) refuses a newcomer ProducerBusy, after the epoch moved;
- the removal of any producer drops the holder mark (the broker's own laxity).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

HELD_BY = "Topic has an existing exclusive producer: "


@dataclass(slots=True)
class Attached:
    """A producer as the broker holds it."""

    name: str
    mode: pb.ProducerAccessMode = pb.Shared
    writes: int = 0  # pushed, not done
    close_request: int | None = None  # CLOSE_PRODUCER waiting for the writes
    closed: bool = False  # fenced out: refuses sends, goes once its writes are done


class Refused(Exception):
    def __init__(self, code: pb.ServerError, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class TopicAccess:
    epoch: int | None = None
    holder: str | None = None
    fences: int = 0  # fencing producers admitted
    history: list[tuple[str, int | None]] = field(default_factory=list)  # (name, epoch) admitted

    def admit(
        self,
        create: pb.CommandProducer,
        name: str,
        attached: Callable[[], list[tuple[Attached, bool]]],
        close: Callable[[Attached], None],
    ) -> int | None:
        """The epoch the producer holds (None: shared, on a topic without one), or
        Refused. `attached()` are the producers attached now, each with whether its
        connection is still open to the broker's knowledge; `close` fences one out
        (gone at once if it has no writes pending)."""
        mode = create.producer_access_mode
        brought = create.topic_epoch if create.HasField("topic_epoch") else None
        stale = brought is not None and self.epoch is not None and brought < self.epoch
        if mode == pb.Shared:
            if self.holder is not None:
                raise Refused(pb.ProducerBusy, HELD_BY + self.holder)
            epoch = self.epoch
        elif mode == pb.Exclusive:
            if self.holder is not None:
                raise Refused(pb.ProducerFenced, HELD_BY + self.holder)
            if attached():
                raise Refused(pb.ProducerFenced, "Topic has existing shared producers")
            epoch = self._hold(name, brought, stale)
        elif mode == pb.ExclusiveWithFencing:
            for producer, _ in attached():
                close(producer)
            epoch = self._hold(name, brought, stale)
            self.fences += 1
        else:
            raise Refused(pb.UnknownError, f"Invalid producer access mode: {mode}")
        if any(p.name == name and live for p, live in attached()):
            raise Refused(
                pb.ProducerBusy, f"Producer with name '{name}' is already connected to topic"
            )
        self.history.append((name, epoch))
        return epoch

    def _hold(self, name: str, brought: int | None, stale: bool) -> int:
        if stale:
            self.holder = None
            raise Refused(
                pb.ProducerFenced,
                f"Topic epoch has already moved. Current epoch: {self.epoch}, "
                f"Producer epoch: {brought}",
            )
        self.holder = name
        if brought is not None:
            self.epoch = brought
        else:
            self.epoch = 0 if self.epoch is None else self.epoch + 1
        return self.epoch

    def removed(self) -> None:
        """A producer went (`handleProducerRemoved`)."""
        self.holder = None
