"""Differences between kop and Kafka that are understood, each with its reason.
Keyed by (scenario, client) or (scenario, "*") for every client. A listed
difference that no longer shows up is reported as stale, so this list stays true.
KNOWN_SEVERAL holds those that show only when several kop instances are judged by
a Kafka cluster of as many brokers (python -m conformance --instances 3)."""

from __future__ import annotations

KNOWN: dict[tuple[str, str], str] = {
    ("tools/broker-api-versions", "java-tools"): (
        "kop advertises exactly the APIs and versions it implements (README, Compatibility). "
        "Not implemented: delegation tokens, "
        "share-group state APIs, which are Kafka's brokers' own (share groups and their "
        "offset APIs are served: D27, D30), "
        "streams groups, telemetry, KRaft quorum APIs. Newer versions "
        "of APIs it has (Produce 13, Fetch 13+, ListOffsets 8+, Metadata 13, "
        "OffsetCommit/OffsetFetch 10, DescribeGroups 6, DescribeLogDirs 5, InitProducerId "
        "6) need topic ids in requests or fields kop does not fill yet. Clients use the "
        "common versions, as with an older Kafka."
    ),
    ("metadata/offsets-topic-reads", "raw"): (
        "kop lists __consumer_offsets (internal, as Kafka does) but does not serve its records: "
        "kop's offsets topic is a Pulsar topic in its own format, not Kafka's. Reads get "
        "TOPIC_AUTHORIZATION_FAILED, what Kafka answers a client without READ on the topic "
        '(docs/groups.md, "__consumer_offsets").'
    ),
    ("security/group-authorization", "confluent-kafka"): (
        "kop authorizes groups by Pulsar's subscription permissions, which only restrict: a "
        "group whose subscription no role was granted (kafka-acls --group) is open to every "
        "role that may consume in the namespace, so a member allowed to READ the topic joins "
        "it. Kafka needs READ on the group itself (GROUP_AUTHORIZATION_FAILED). A group named "
        "in a grant is its roles' only, on both (docs/security.md, the permission table)."
    ),
}

# Each is a kop bug with several instances (docs/compatibility-3-instances.md), listed so
# that the run stays a check on everything else; remove an entry once it is fixed (a
# fixed one that is not intermittent then shows as stale).
KNOWN_SEVERAL: dict[tuple[str, str], str] = {
    ("tools/topics", "java-tools"): (
        "kop bug: each instance keeps a topic's description for up to 5 s (TopicCatalog's "
        "ttl_s, kop/topics/catalog.py) and learns of a change made through another instance only "
        "then: kafka-topics --describe right after --alter --partitions 3 shows 2 partitions "
        "when it asks another instance. Kafka's brokers apply the change from the metadata log "
        "within milliseconds. Shows only when the describe reaches another instance in time."
    ),
    ("tools/configs", "java-tools"): (
        "kop bug, the same as tools/topics': each instance keeps a topic's description, its "
        "configs included, for up to 5 s (TopicCatalog's ttl_s), so kafka-configs --describe "
        "right after --alter --add-config shows no dynamic config when it reaches another "
        "instance than the alter did. Shows only when the describe reaches another instance "
        "in time."
    ),
    ("tools/group-configs", "java-tools"): (
        "kop bug of the same kind (D31): each instance reads a namespace's group configs at "
        "most once per 5 s, so kafka-configs --describe right after --alter --delete-config "
        "still shows the deleted config when it reaches another instance than the alter did. "
        "Shows only when the describe reaches another instance in time."
    ),
    ("groups/deleted-topic-offsets", "confluent-kafka"): (
        "kop bug, narrowed: DeleteTopics is carried out by the instance that receives it; the "
        "others learn of it from the leader-epoch table's tombstones, let go of the partitions "
        "they own and remove their groups' offsets of the topic (kop/groups/topic_deletion.py). "
        "Left: Pulsar deletes the topic as soon as the receiving instance asks, and an owner "
        "that has not yet read the tombstone may have its reader subscribe again meanwhile, "
        "which makes Pulsar create the partition anew: the topic created again then goes on "
        "from the old offsets."
    ),
}

# Differences that show only on some runs, depending on which instance a request
# reaches or when: an agreeing run of one of them is not reported as stale.
INTERMITTENT: frozenset[tuple[str, str]] = frozenset(
    {
        ("tools/topics", "java-tools"),
        ("tools/configs", "java-tools"),
        ("tools/group-configs", "java-tools"),
        ("groups/deleted-topic-offsets", "confluent-kafka"),
    }
)


def intermittent(scenario: str, client: str) -> bool:
    return (scenario, client) in INTERMITTENT or (scenario, "*") in INTERMITTENT


def known_reason(scenario: str, client: str, instances: int) -> str | None:
    """Why (scenario, client) differs on purpose in this setting; None: it must agree."""
    tables = [KNOWN_SEVERAL, KNOWN] if instances > 1 else [KNOWN]
    for table in tables:
        for key in ((scenario, client), (scenario, "*")):
            if key in table:
                return table[key]
    return None
