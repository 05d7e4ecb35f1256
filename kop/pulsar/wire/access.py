"""A producer's access mode: what it asks of the broker, what the broker's answers
mean for it (the part of the Java client's ProducerImpl.connectionOpened about
`ProducerAccessMode`, `topicEpoch` and user-provided names).

How the broker decides, in apache/pulsar's `AbstractTopic.incrementTopicEpochIfNeeded`
and `ServerCnx.handleProducer` (read for this module; behaviour checked on Pulsar
4.0.7, docs/design/several-instances.md F1-F7):

- `Shared` is refused ProducerBusy "Topic has an existing exclusive producer: <name>"
  while an exclusive producer holds the topic;
- `Exclusive` is refused ProducerFenced while any producer is attached ("... existing
  exclusive producer: <name>", "Topic has existing shared producers"), or when the
  epoch it brings is below the topic's ("Topic epoch has already moved");
- `ExclusiveWithFencing` first closes every producer attached (so even a refused
  one disturbs the holder once), then is refused ProducerFenced "Topic epoch has
  already moved" if it brings an epoch below the topic's; without an epoch it
  always wins and the topic's epoch (a managed-ledger property, kept across
  unloads and restarts) grows by one;
- a producer that brings its epoch keeps it (`setTopicEpoch`): that is how a
  holder re-attaches after an unload without losing the fence (F4);
- `CommandProducerSuccess` carries the topic's epoch (to a `Shared` producer too)
  and `last_sequence_id`, the highest sequence id deduplication has *pushed* under
  the producer's name (docs/decisions.md D9). An answer to a PRODUCER whose id the
  connection already holds carries neither.

A producer that fences and then shares (`Hold.fence_first`, docs/decisions.md D21)
takes the topic with `ExclusiveWithFencing` once (every producer attached is closed,
the epoch grows), closes that producer and attaches `Shared` beside Pulsar
applications' producers, holding the epoch its fence made: every later attach must
find the topic at that epoch, or another fence came after it (`epoch_moved`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kop.pulsar.wire.errors import ProducerBusyError, ProducerFencedError, PulsarWireError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

SHARED = pb.Shared
EXCLUSIVE = pb.Exclusive
FENCING = pb.ExclusiveWithFencing
MODES = frozenset({SHARED, EXCLUSIVE, FENCING})  # WaitForExclusive is not offered

_HELD_BY = "existing exclusive producer: "  # the broker's words, in both refusals


@dataclass(slots=True)
class Hold:
    """How a producer holds its topic, as the broker said. `topic_epoch` is the
    topic's epoch it holds (None: none given yet, or a plain shared producer);
    `resumed_after` is `last_sequence_id` at the first attach. `fence_first`: the
    next attach fences, and the producer then holds the topic shared (the mode
    becomes Shared, the epoch is the fence's)."""

    mode: pb.ProducerAccessMode
    topic_epoch: int | None = None
    resumed_after: int = -1
    fence_first: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"access mode {self.mode} is not supported")

    @property
    def epoch(self) -> int:
        """The topic epoch held; -1 for none."""
        return -1 if self.topic_epoch is None else self.topic_epoch

    @property
    def brought_epoch(self) -> int | None:
        """The epoch an attach brings: an exclusive holder's (the broker keeps its
        fence); a shared producer brings none (the broker ignores it)."""
        return None if self.mode == SHARED else self.topic_epoch

    def fenced_as(self, topic_epoch: int) -> None:
        """The fence went through at `topic_epoch`: from now on, shared at it."""
        self.mode, self.topic_epoch, self.fence_first = SHARED, topic_epoch, False


def epoch_moved(hold: Hold, success: pb.CommandProducerSuccess) -> str | None:
    """Why a shared producer that holds an epoch (it fenced first) may not write:
    the topic's epoch is not the one its fence made, so another fence came after."""
    if hold.mode != SHARED or hold.topic_epoch is None:
        return None
    found = success.topic_epoch if success.HasField("topic_epoch") else None
    if found == hold.topic_epoch:
        return None
    return f"the topic's epoch is {found}, not {hold.topic_epoch}: another producer took it"


def producer_command(
    topic: str,
    producer_id: int,
    request_id: int,
    epoch: int,
    mode: pb.ProducerAccessMode,
    name: str,
    user_named: bool,
    topic_epoch: int | None,
) -> pb.CommandProducer:
    """PRODUCER as the Java client sends it: the name the caller chose (every
    attach, so deduplication's state under it applies), or on re-creation the one
    the broker gave; the topic epoch once the broker gave one."""
    create = pb.CommandProducer(
        topic=topic,
        producer_id=producer_id,
        request_id=request_id,
        epoch=epoch,
        producer_access_mode=mode,
    )
    if name:
        create.producer_name = name
        create.user_provided_producer_name = user_named
    if topic_epoch is not None:
        create.topic_epoch = topic_epoch
    return create


def refusal(
    error: PulsarWireError, mode: pb.ProducerAccessMode, name: str, first: bool
) -> PulsarWireError:
    """What a refused PRODUCER means for this producer.

    At creation (`first`), ProducerFenced and ProducerBusy are final, as in Java,
    except for a fencing producer refused ProducerBusy: that is its name still
    held by a producer being closed (the broker probes the old connection,
    `tryOverwriteOldProducer`), which a later attempt gets past.

    On re-creation, ProducerFenced is final: a fencing producer took the topic
    (Java: state ProducerFenced), unless an exclusive producer is refused
    because the holder is itself, an incarnation on a connection the broker has not
    yet seen close. A shared producer refused because an exclusive one holds the
    topic is fenced too (the storage port's FENCING fences every other writer);
    Java would retry it until its sends time out. Any other ProducerBusy is this
    producer's name still held by its old incarnation: retriable."""
    code = error.server_error
    if code == pb.ProducerFenced:
        if not first and mode == EXCLUSIVE and error.message.endswith(_HELD_BY + name):
            return PulsarWireError(f"{error.message} (our own former attachment)", True, code)
        if first:
            return ProducerBusyError(error.message, code)
        return error
    if code == pb.ProducerBusy:
        if _HELD_BY in error.message:
            if first:
                return ProducerBusyError(error.message, code)
            return ProducerFencedError(error.message, code)
        if first and mode != FENCING:
            return ProducerBusyError(error.message, code)
    return error
