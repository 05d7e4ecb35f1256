"""Differences between kop and Kafka that are understood, each with its reason.
Keyed by (scenario, client) or (scenario, "*") for every client. A listed
difference that no longer shows up is reported as stale, so this list stays true."""

from __future__ import annotations

KNOWN: dict[tuple[str, str], str] = {
    ("tools/broker-api-versions", "java-tools"): (
        "kop advertises exactly the APIs and versions it implements (README, Compatibility). "
        "Not implemented: transactions (AddPartitionsToTxn, EndTxn, TxnOffsetCommit, ...), "
        "SASL, ACLs, quotas, delegation tokens, SCRAM, partition reassignment and leader "
        "election (Pulsar places data, there is one broker), the KIP-848 consumer protocol, "
        "share and streams groups, telemetry, KRaft quorum APIs. Newer versions of APIs it has "
        "(Produce 10+, Fetch 13+, ListOffsets 8+, Metadata 13, OffsetCommit/OffsetFetch 10, "
        "DescribeGroups 6, DescribeLogDirs 5) need topic ids in requests or fields kop does not "
        "fill yet. Clients use the common versions, as with an older Kafka."
    ),
    ("metadata/offsets-topic-reads", "raw"): (
        "kop lists __consumer_offsets (internal, as Kafka does) but does not serve its records: "
        "kop's offsets topic is a Pulsar topic in its own format, not Kafka's. Reads get "
        "TOPIC_AUTHORIZATION_FAILED, what Kafka answers a client without READ on the topic "
        '(docs/groups.md, "__consumer_offsets").'
    ),
}
