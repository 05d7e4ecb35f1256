"""Leader epochs (KIP-101, KIP-320) as one kop instance has them.

A partition's leader never changes while one kop serves it, so its epoch is
constant: 0, since its first offset, as Kafka's leader epoch cache holds it for
a partition whose leader never moved. Kafka stamps the epoch on every batch it
appends; kop stamps it on every batch it serves, so consumers commit it and
validate their positions with OffsetForLeaderEpoch, as they do against Kafka.
Several instances (partition ownership moving between them) will have to grow
it with every change of owner (DESIGN.md, "Several instances").
"""

from __future__ import annotations

from kop.protocol.errors import ErrorCode, KafkaError

LEADER_EPOCH = 0
NO_EPOCH = -1  # "none given" in requests; "undefined" in answers


def check_current(current: int, epoch: int = LEADER_EPOCH) -> None:
    """A client's `current_leader_epoch` (-1: none) against the leader's, as Kafka
    checks it: older is fenced, newer is metadata this leader has not seen."""
    if current in (NO_EPOCH, epoch):
        return
    if current < epoch:
        raise KafkaError(ErrorCode.fenced_leader_epoch, f"leader epoch {current} < {epoch}")
    raise KafkaError(ErrorCode.unknown_leader_epoch, f"leader epoch {current} > {epoch}")


def end_offset_for(
    requested: int, log_start: int, log_end: int, epoch: int = LEADER_EPOCH
) -> tuple[int, int]:
    """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's leader epoch cache
    answers with one entry (`epoch` from `log_start`): the current epoch ends at the
    log end; a newer or undefined one is unknown (-1, -1); an older one is taken to
    end where the first known epoch starts."""
    if requested == epoch:
        return epoch, log_end
    if requested == NO_EPOCH or requested > epoch:
        return NO_EPOCH, -1
    return requested, log_start
