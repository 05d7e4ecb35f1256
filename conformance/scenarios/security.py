"""Authentication and authorization over each target's SASL_SSL listener
(conformance/targets.py, `Secure`): failure codes and messages, what a user without
a grant is refused, what a grant allows, and Kafka's ACL and SCRAM tools."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from conformance.clients.base import ClientError, Unsupported
from conformance.clients.java_tools import JavaTools
from conformance.clients.raw import RawClient
from conformance.clients.sasl import SASL_CLIENTS, JavaSasl, Login, SaslClient, properties_file
from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic

FAMILIES = ("confluent-kafka", "kafka-python", "aiokafka", "java-tools")


def _login(ctx: Ctx, user: str, password: str | None = None, mechanism: str = "PLAIN") -> Login:
    secure = ctx.target.secure
    if secure is None:
        raise Unsupported("this target has no SASL_SSL listener (several brokers)")
    known = secure.users.get(user, "")
    return Login(secure.bootstrap, secure.ca_file, user, password or known, mechanism)


def _client(driver: Any) -> SaslClient:
    return JavaSasl(driver) if isinstance(driver, JavaTools) else SASL_CLIENTS[driver.name]


def _attempt(ctx: Ctx, step: Callable[[], Observation]) -> Observation:
    """What the step returned, or the client's failure as the client names it."""
    try:
        return step()
    except ClientError as exc:
        return {"client error": ctx.strip(exc.name)}


def _admin(ctx: Ctx) -> AdminClient:
    """The super user `admin` over SASL_SSL, for set-up steps that are not judged."""
    login = _login(ctx, "admin")
    return AdminClient({
        "bootstrap.servers": login.bootstrap, "security.protocol": "SASL_SSL",
        "ssl.ca.location": login.ca_file, "sasl.mechanisms": "PLAIN",
        "sasl.username": login.user, "sasl.password": login.password,
    })  # fmt: skip


def _no_grants(ctx: Ctx, user: str) -> None:
    """Remove every ACL of `user`: a scenario starts from nothing on both targets
    (Kafka keeps a deleted topic's ACLs, and would answer from earlier runs' grants)."""
    admin = _admin(ctx)
    anything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{user}", None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    for fut in admin.delete_acls([anything]).values():
        fut.result(60)


def _allow(ctx: Ctx, user: str, grants: list[tuple[ResourceType, str, AclOperation]]) -> None:
    bindings = [
        AclBinding(kind, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op,
                   AclPermissionType.ALLOW)
        for kind, name, op in grants
    ]  # fmt: skip
    admin = _admin(ctx)  # referenced until its futures resolve (librdkafka destroys it)
    for fut in admin.create_acls(bindings).values():
        fut.result(60)


# kafka-python waits out its bootstrap timeout on each refusal: the full matrix only.
QUICK = ("confluent-kafka", "aiokafka", "java-tools")


@scenario("security/authentication-failure", FAMILIES, quick=QUICK)
def authentication_failure(ctx: Ctx, driver: Any) -> Observation:
    """A wrong PLAIN password, a wrong SCRAM-SHA-512 password and an unknown SCRAM
    user: what the client reports (nothing is produced)."""
    client = _client(driver)
    topic = ctx.name("auth")
    create_topic(ctx.bootstrap, topic)
    tries = {
        "plain, wrong password": _login(ctx, "alice", "not-her-password"),
        "scram-sha-512, wrong password": _login(ctx, "alice", "nope", "SCRAM-SHA-512"),
        "scram-sha-256, unknown user": _login(ctx, "nobody", "secret", "SCRAM-SHA-256"),
    }
    return {
        what: _attempt(ctx, lambda login=login: client.produce(ctx, login, topic, ["x"]))
        for what, login in tries.items()
    }


@scenario("security/topic-authorization", FAMILIES, quick=QUICK)
def topic_authorization(ctx: Ctx, driver: Any) -> Observation:
    """alice, allowed the group but not the topic: producing and consuming are refused;
    after WRITE and READ on the topic are granted both work."""
    client = _client(driver)
    topic, group = ctx.name("authz"), ctx.name("authz-group")
    create_topic(ctx.bootstrap, topic)
    alice = _login(ctx, "alice")
    _no_grants(ctx, "alice")
    _allow(ctx, "alice", [(ResourceType.GROUP, group, AclOperation.READ)])
    out: dict[str, Observation] = {
        "produce, no grant": _attempt(ctx, lambda: client.produce(ctx, alice, topic, ["a"])),
        "consume, no grant": _attempt(
            ctx, lambda: client.group_consume(ctx, alice, topic, group, 1)
        ),
    }
    _allow(ctx, "alice", [(ResourceType.TOPIC, topic, AclOperation.WRITE),
                          (ResourceType.TOPIC, topic, AclOperation.READ)])  # fmt: skip
    values = ["v0", "v1", "v2"]
    out["produce, granted"] = _attempt(ctx, lambda: client.produce(ctx, alice, topic, values))
    out["consume, granted"] = _attempt(
        ctx, lambda: client.group_consume(ctx, alice, topic, group, 3)
    )
    return out


@scenario("security/group-authorization", ("confluent-kafka",))
def group_authorization(ctx: Ctx, driver: Any) -> Observation:
    """alice may read the topic but was granted no group: joining one."""
    client = _client(driver)
    topic, group = ctx.name("g-authz"), ctx.name("g-authz-group")
    create_topic(ctx.bootstrap, topic)
    _no_grants(ctx, "alice")
    _allow(ctx, "alice", [(ResourceType.TOPIC, topic, AclOperation.READ),
                          (ResourceType.TOPIC, topic, AclOperation.WRITE)])  # fmt: skip
    alice = _login(ctx, "alice")
    return {
        "produce": _attempt(ctx, lambda: client.produce(ctx, alice, topic, ["a"])),
        "consume": _attempt(ctx, lambda: client.group_consume(ctx, alice, topic, group, 1)),
    }


def _error_name(fut: Any) -> str:
    try:
        fut.result(60)
        return "ok"
    except KafkaException as exc:
        return str(exc.args[0].name())


@scenario("security/admin-authorization", ("confluent-kafka",), quick=True)
def admin_authorization(ctx: Ctx, driver: Any) -> Observation:
    """alice, with no grant, as an admin client: create and delete a topic, describe
    the broker's configs, grant herself an ACL, list the topics."""
    topic, theirs = ctx.name("admin-new"), ctx.name("admin-theirs")
    create_topic(ctx.bootstrap, theirs)
    _no_grants(ctx, "alice")
    login = _login(ctx, "alice")
    alice = AdminClient({
        "bootstrap.servers": login.bootstrap, "security.protocol": "SASL_SSL",
        "ssl.ca.location": login.ca_file, "sasl.mechanisms": "PLAIN",
        "sasl.username": login.user, "sasl.password": login.password,
    })  # fmt: skip
    grant = AclBinding(ResourceType.TOPIC, theirs, ResourcePatternType.LITERAL, "User:alice",
                       "*", AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    metadata = alice.list_topics(timeout=30)
    broker = ConfigResource(ConfigResource.Type.BROKER, str(min(metadata.brokers)))
    listed = metadata.topics
    return {
        "create topic": _error_name(alice.create_topics([NewTopic(topic, 1)])[topic]),
        "delete topic": _error_name(alice.delete_topics([theirs])[theirs]),
        "describe broker configs": _error_name(alice.describe_configs([broker])[broker]),
        "create acl": _error_name(alice.create_acls([grant])[grant]),
        "lists the topic": theirs in listed,
    }


def _acls(ctx: Ctx, tools: JavaTools, admin: str, *args: str) -> dict[str, Any]:
    login = _login(ctx, "admin")
    run = tools.run(ctx, "acls", "--bootstrap-server", login.bootstrap,
                    "--command-config", admin, *args)  # fmt: skip
    return {**run.__dict__, "out": _entries_sorted(run.out)}


def _entries_sorted(lines: list[str]) -> list[str]:
    """kafka-acls prints a resource's ACLs (its tab-indented lines) from a hash set,
    in an order that differs from run to run (the set hashes the run's topic name):
    each block sorted, the blocks kept in place."""
    out: list[str] = []
    block: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("\t"):
            block.append(line)
            continue
        out += sorted(block)
        block = []
        out.append(line)
    return out[:-1]


@scenario("security/acl-tool", ("java-tools",), quick=True)
def acl_tool(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-acls as the super user over SASL_SSL: allow alice to read and write a
    topic, list the topic's ACLs, remove them, list again."""
    topic = ctx.name("acl-tool")
    create_topic(ctx.bootstrap, topic)
    admin = properties_file(_login(ctx, "admin"))
    who = ["--allow-principal", "User:alice", "--topic", topic]
    ops = ["--operation", "Read", "--operation", "Write"]
    return {
        "add": _acls(ctx, tools, admin, "--add", *who, *ops),
        "list": _acls(ctx, tools, admin, "--list", "--topic", topic),
        "remove": _acls(ctx, tools, admin, "--remove", "--force", *who, *ops),
        "list after": _acls(ctx, tools, admin, "--list", "--topic", topic),
    }


@scenario("security/scram-credentials", ("java-tools",), quick=True)
def scram_credentials(ctx: Ctx, tools: JavaTools) -> Observation:
    """kafka-configs as the super user makes a SCRAM user (both mechanisms at once is
    refused, then one each) and describes it; the user, granted the topic, produces
    with SCRAM-SHA-512 and reads back with SCRAM-SHA-256."""
    user, topic, group = ctx.name("carol"), ctx.name("scram"), ctx.name("scram-group")
    create_topic(ctx.bootstrap, topic)
    admin = _login(ctx, "admin")
    config = ["--bootstrap-server", admin.bootstrap, "--command-config", properties_file(admin)]
    entity = ["--entity-type", "users", "--entity-name", user]
    alter = [*config, "--alter", *entity, "--add-config"]
    sha256, sha512 = "SCRAM-SHA-256=[iterations=8192,password=s3]", "SCRAM-SHA-512=[password=s3]"
    both = tools.run(ctx, "configs", *alter, f"{sha256},{sha512}")
    made = [tools.run(ctx, "configs", *alter, sha256), tools.run(ctx, "configs", *alter, sha512)]
    described = tools.run(ctx, "configs", *config, "--describe", *entity)
    _allow(ctx, user, [(ResourceType.TOPIC, topic, AclOperation.WRITE),
                       (ResourceType.TOPIC, topic, AclOperation.READ),
                       (ResourceType.GROUP, group, AclOperation.READ)])  # fmt: skip
    java = JavaSasl(tools)
    writer = _login(ctx, user, "s3", "SCRAM-SHA-512")
    reader = _login(ctx, user, "s3", "SCRAM-SHA-256")
    return {
        "both mechanisms in one request": {"code": both.code, "out": both.out[:2]},
        "alter, one each": [m.__dict__ for m in made],
        "describe": {
            "code": described.code,
            "out": [_sorted_mechanisms(line) for line in described.out],
        },
        "produce": _attempt(ctx, lambda: java.produce(ctx, writer, topic, ["s0", "s1"])),
        "consume": _attempt(ctx, lambda: java.group_consume(ctx, reader, topic, group, 2)),
    }


def _sorted_mechanisms(line: str) -> str:
    """kafka-configs lists a user's mechanisms in the broker's hash order (it varies
    between Kafka runs): sorted, the line says the same either way."""
    head, sep, listed = line.partition(" are ")
    return head + sep + ", ".join(sorted(listed.split(", "))) if sep else line


@scenario("security/sasl-frames", ("raw",), quick=True)
def sasl_frames(ctx: Ctx, _: Any) -> Observation:
    """Exact SASL exchanges on the SASL_SSL listener: a mechanism not enabled, a wrong
    PLAIN and a wrong SCRAM password, and a request before authentication; whether
    the connection is closed after each."""
    login = _login(ctx, "alice")
    host, port = login.bootstrap.rsplit(":", 1)
    tls = ssl.create_default_context(cafile=login.ca_file)

    def connect() -> RawClient:
        return RawClient(int(port), host=host, tls=tls)

    out: dict[str, Observation] = {}
    c = connect()
    shake = c.sasl("GSSAPI", b"")
    out["gssapi"] = {"error": shake.error_code.name, "mechanisms": sorted(shake.mechanisms),
                     "closed": c.wait_closed_by_peer(10)}  # fmt: skip
    for what, mechanism, first in (
        ("plain", "PLAIN", b"\0alice\0wrong"),
        ("scram", "SCRAM-SHA-256", b"n,,n=nobody,r=abcdefghijklmnop"),
    ):
        c = connect()
        answer = c.sasl(mechanism, first)
        if answer.error_code.name == "none" and mechanism.startswith("SCRAM"):
            # kop answers an unknown user as any other and refuses only at the end
            answer = c.request(36, 2, auth_bytes=b"c=biws,r=x,p=AAAA")
        out[what] = {"error": answer.error_code.name, "message": answer.error_message,
                     "closed": c.wait_closed_by_peer(10)}  # fmt: skip
    c = connect()
    try:
        c.request(3, 4, topics=None, allow_auto_topic_creation=False)
        out["metadata before authentication"] = "answered"
    except ConnectionError:
        out["metadata before authentication"] = "connection closed"
    return out
