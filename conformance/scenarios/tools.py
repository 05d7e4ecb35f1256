"""Kafka's own command-line tools against each target, compared on their output."""

from __future__ import annotations

import json
import re
import tempfile
from typing import Any

from conformance.clients.java_tools import JavaTools, java_program
from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic

JAVA = ("java-tools",)


def _bs(ctx: Ctx) -> list[str]:
    return ["--bootstrap-server", ctx.bootstrap]


def _printing(*fields: str) -> list[str]:
    return [a for f in fields for a in ("--formatter-property", f"print.{f}=true")]


@scenario("tools/console-round-trip", JAVA, quick=True)
def console_round_trip(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-console-producer with keys and headers, kafka-console-consumer printing
    partition, offset, headers, key and value."""
    topic = ctx.name("console")
    create_topic(ctx.bootstrap, topic)
    lines = "".join(f"h{i}:x{i},n:{i}\tk{i}\tvalue {i}\n" for i in range(5))
    produced = tools.run(
        ctx, "console-producer", *_bs(ctx), "--topic", topic,
        "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true",
        "--reader-property", "key.separator=\t", stdin=lines,
    )  # fmt: skip
    consumed = tools.run(
        ctx, "console-consumer", *_bs(ctx), "--topic", topic, "--from-beginning",
        "--max-messages", "5", "--timeout-ms", "20000",
        *_printing("key", "offset", "partition", "headers"),
    )  # fmt: skip
    return {"producer": produced.__dict__, "consumer": consumed.__dict__}


@scenario("tools/topics", JAVA, quick=True)
def topics(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-topics: create with a config, describe, add partitions, list, delete."""
    topic = ctx.name("cli-topic")
    out: dict[str, Any] = {}
    steps = {
        "create": ["--create", "--topic", topic, "--partitions", "2",
                   "--config", "retention.ms=3600000"],
        "describe": ["--describe", "--topic", topic],
        "alter": ["--alter", "--topic", topic, "--partitions", "3"],
        "describe after": ["--describe", "--topic", topic],
        "delete": ["--delete", "--topic", topic],
    }  # fmt: skip
    for step, args in steps.items():
        out[step] = tools.run(ctx, "topics", *_bs(ctx), *args).__dict__
    return out


@scenario("tools/consumer-groups", JAVA, quick=True)
def consumer_groups(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-consumer-groups: describe a group after a console consumer committed,
    reset its offsets to 3, describe again, delete it."""
    topic, group = ctx.name("cg-topic"), ctx.name("cg")
    create_topic(ctx.bootstrap, topic)
    tools.run(ctx, "console-producer", *_bs(ctx), "--topic", topic,
              stdin="".join(f"v{i}\n" for i in range(10)))  # fmt: skip
    consumed = tools.run(
        ctx, "console-consumer", *_bs(ctx), "--topic", topic, "--group", group,
        "--from-beginning", "--max-messages", "10", "--timeout-ms", "20000",
    )  # fmt: skip
    g = ["--group", group]
    return {
        "consumed": consumed.__dict__,
        "describe": tools.run(ctx, "consumer-groups", *_bs(ctx), "--describe", *g).__dict__,
        "reset": tools.run(
            ctx,
            "consumer-groups",
            *_bs(ctx),
            "--reset-offsets",
            *g,
            "--topic",
            topic,
            "--to-offset",
            "3",
            "--execute",
        ).__dict__,
        "describe after": tools.run(ctx, "consumer-groups", *_bs(ctx), "--describe", *g).__dict__,
        "delete": tools.run(ctx, "consumer-groups", *_bs(ctx), "--delete", *g).__dict__,
    }


@scenario("tools/consumer-protocol", JAVA, quick=True)
def consumer_protocol(ctx: Ctx, tools: JavaTools) -> Observation:
    """The KIP-848 consumer protocol through Kafka's tools: a console consumer with
    group.protocol=consumer reads and commits, kafka-consumer-groups describes the
    group (its offsets, then its state and assignor), VerifiableConsumer of the same
    protocol reads the rest in a group of its own, and the empty group is deleted."""
    topic, group, other = ctx.name("cp-topic"), ctx.name("cp"), ctx.name("cpv")
    create_topic(ctx.bootstrap, topic)
    tools.run(ctx, "console-producer", *_bs(ctx), "--topic", topic,
              stdin="".join(f"v{i}\n" for i in range(10)))  # fmt: skip
    protocol = ["--consumer-property", "group.protocol=consumer"]
    consumed = tools.run(
        ctx, "console-consumer", *_bs(ctx), "--topic", topic, "--group", group, *protocol,
        "--from-beginning", "--max-messages", "10", "--timeout-ms", "20000",
    )  # fmt: skip
    g = ["--group", group]
    verified = tools.run(
        ctx, "verifiable-consumer", *_bs(ctx), "--topic", topic, "--group-id", other,
        "--group-protocol", "consumer", "--max-messages", "10", timeout=120,
    )  # fmt: skip
    events = [json.loads(line) for line in verified.out if line.startswith("{")]
    records = [p for e in events if e.get("name") == "records_consumed" for p in e["partitions"]]
    commits = [e for e in events if e.get("name") == "offsets_committed"]
    return {
        "consumed": sorted(consumed.out),
        "describe": tools.run(ctx, "consumer-groups", *_bs(ctx), "--describe", *g).__dict__,
        # the coordinator's node id is the one thing that differs by construction
        "state": [
            re.sub(r"\(\d+\)", "(<node>)", line)
            for line in tools.run(
                ctx, "consumer-groups", *_bs(ctx), "--describe", "--state", *g
            ).out
        ],
        "verifiable consumed": sum(r["count"] for r in records),
        "verifiable commits ok": all(c.get("success") for c in commits) and bool(commits),
        "delete": tools.run(ctx, "consumer-groups", *_bs(ctx), "--delete", *g).__dict__,
    }


@scenario("tools/protocol-migration", JAVA)
def protocol_migration(ctx: Ctx, _tools: JavaTools) -> Observation:
    """Kafka's online migration with the Java consumer (tests/integration/java/
    ProtocolMigration.java): a classic member holds a group, a member with
    group.protocol=consumer joins (the group is upgraded), they split the partitions
    and read everything once, the new member leaves (downgraded), the classic member
    reads on; the admin describes the group at each stage."""
    topic, group = ctx.name("mig"), ctx.name("mig-g")
    create_topic(ctx.bootstrap, topic, 4)
    return java_program("ProtocolMigration", ctx.bootstrap, topic, group, "4")


@scenario("tools/configs", JAVA)
def configs(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-configs: describe a topic's configs, add one, delete it again."""
    topic = ctx.name("cli-cfg")
    create_topic(ctx.bootstrap, topic)
    t = ["--entity-type", "topics", "--entity-name", topic]
    return {
        "before": tools.run(ctx, "configs", *_bs(ctx), "--describe", *t).__dict__,
        **_alter_round(ctx, tools, t, "retention.ms=3600000", "retention.ms"),
    }


@scenario("tools/group-configs", JAVA)
def group_configs(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-configs on a group (KIP-848 and KIP-932 per-group configs): add two, describe,
    delete one, describe; values out of Kafka's bounds or of their kind, and an unknown
    name, are refused."""
    g = ["--entity-type", "groups", "--entity-name", ctx.name("cfg-group")]

    def refused(config: str) -> dict[str, Any]:
        return dict(tools.run(ctx, "configs", *_bs(ctx), "--alter", "--add-config", config,
                              *g).__dict__)  # fmt: skip

    return {
        **_alter_round(
            ctx,
            tools,
            g,
            "share.auto.offset.reset=earliest,consumer.session.timeout.ms=50000",
            "consumer.session.timeout.ms",
        ),
        "out of bounds": refused("share.delivery.count.limit=11"),
        "below the floor": refused("share.record.lock.duration.ms=999"),
        "not a number": refused("share.heartbeat.interval.ms=soon"),
        "not a reset": refused("share.auto.offset.reset=newest"),
        "unknown": refused("no.such.group.config=1"),
    }


def _alter_round(
    ctx: Ctx, tools: JavaTools, entity: list[str], add: str, delete: str
) -> Observation:
    """kafka-configs --alter --add-config, --describe, --alter --delete-config,
    --describe, as a user changes one entity's configs."""

    def configs(*args: str) -> dict[str, Any]:
        return dict(tools.run(ctx, "configs", *_bs(ctx), *args, *entity).__dict__)

    return {
        "add": configs("--alter", "--add-config", add),
        "after add": configs("--describe"),
        "delete": configs("--alter", "--delete-config", delete),
        "after delete": configs("--describe"),
    }


@scenario("tools/client-quotas", JAVA, quick=True)
def client_quotas(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-configs on client quotas: set two of a client id's, describe them, delete
    one, describe again; a key Kafka does not know is refused."""
    c = ["--entity-type", "clients", "--entity-name", ctx.name("quota-client")]
    rates = "producer_byte_rate=1048576,request_percentage=50"
    return {
        **_alter_round(ctx, tools, c, rates, "request_percentage"),
        "unknown key": tools.run(
            ctx, "configs", *_bs(ctx), "--alter", *c, "--add-config", "made_up_rate=5"
        ).__dict__,
    }


@scenario("tools/delete-records", JAVA)
def delete_records(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-delete-records before offset 4, then the earliest offset (kafka-get-offsets)."""
    topic = ctx.name("cli-delrec")
    create_topic(ctx.bootstrap, topic)
    tools.run(ctx, "console-producer", *_bs(ctx), "--topic", topic,
              stdin="".join(f"v{i}\n" for i in range(10)))  # fmt: skip
    spec = {"partitions": [{"topic": topic, "partition": 0, "offset": 4}], "version": 1}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(spec, f)
        f.flush()
        deleted = tools.run(ctx, "delete-records", *_bs(ctx), "--offset-json-file", f.name)
    earliest = tools.run(ctx, "get-offsets", *_bs(ctx), "--topic", topic, "--time", "-2")
    return {"delete": deleted.__dict__, "earliest": earliest.__dict__}


@scenario("tools/log-dirs", JAVA)
def log_dirs(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-log-dirs --describe for one topic: its partitions are listed, with no lag."""
    topic = ctx.name("cli-logdirs")
    create_topic(ctx.bootstrap, topic, 2)
    run = tools.run(ctx, "log-dirs", *_bs(ctx), "--describe", "--topic-list", topic)
    if run.code != 0:
        return run.__dict__
    listed = json.loads(next(line for line in run.out if line.startswith("{")))
    partitions = [
        (p["partition"], p["offsetLag"], p["isFuture"])
        for b in listed["brokers"] for d in b["logDirs"] for p in d["partitions"]
    ]  # fmt: skip
    return {"code": run.code, "partitions": sorted(partitions)}


@scenario("tools/verifiable", JAVA)
def verifiable(ctx: Ctx, tools: JavaTools) -> Observation:
    """VerifiableProducer sends 200 records with acks=all; VerifiableConsumer in a
    group reads and commits them all."""
    topic, group = ctx.name("verifiable"), ctx.name("vgroup")
    create_topic(ctx.bootstrap, topic, 2)
    produced = tools.run(ctx, "verifiable-producer", *_bs(ctx), "--topic", topic,
                         "--max-messages", "200", "--acks", "-1")  # fmt: skip
    sends = [json.loads(line) for line in produced.out if line.startswith("{")]
    ok = [e for e in sends if e.get("name") == "producer_send_success"]
    consumed = tools.run(
        ctx, "verifiable-consumer", *_bs(ctx), "--topic", topic, "--group-id", group,
        "--max-messages", "200", timeout=120,
    )  # fmt: skip
    events = [json.loads(line) for line in consumed.out if line.startswith("{")]
    records = [p for e in events if e.get("name") == "records_consumed" for p in e["partitions"]]
    commits = [e for e in events if e.get("name") == "offsets_committed"]
    return {
        "acked": len(ok),
        "offsets per partition": {
            str(p): sorted(e["offset"] for e in ok if e["partition"] == p)
            == list(range(sum(1 for e in ok if e["partition"] == p)))
            for p in (0, 1)
        },
        "consumed": sum(r["count"] for r in records),
        "commits ok": all(c.get("success") for c in commits) and bool(commits),
    }


@scenario("tools/broker-api-versions", JAVA)
def broker_api_versions(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-broker-api-versions: the APIs and the newest usable version of each."""
    run = tools.run(ctx, "broker-api-versions", *_bs(ctx))
    apis = {}
    for line in run.out:
        name, _, rest = line.strip().partition(": ")
        if "(" in name and name.endswith(")"):
            apis[name] = rest.rstrip(",").split("usable: ")[-1].rstrip("]")
    return {"code": run.code, "apis": apis}
