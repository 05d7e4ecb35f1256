"""Two tenants' Kafka clients through one kop, on the Pulsar cluster with token
authentication and authorization (issue 22): each signs in over SASL_SSL with a
token of its own role (signed with the key Pulsar's brokers check), works in its
own tenant, and can neither see, read, write, delete, commit offsets for nor join
groups on the other's topics; wrong, expired and unsigned tokens are refused."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import jwt
import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from tests.cluster.tenants import (
    REFUSED,
    Tenants,
    auth_error,
    commit_error,
    consume,
    delete_error,
    metadata_error,
    produce,
)

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[2]


def test_each_tenant_works_in_its_own_and_cannot_touch_the_others(tenants: Tenants) -> None:
    a, b = tenants.conf("a"), tenants.conf("b")
    assert produce(a, "orders", 5) == [0] * 5
    assert produce(b, "orders", 3) == [0] * 3  # the same name: b's own topic
    assert consume(a, "orders", "g", 5) == ([f"v{i}" for i in range(5)], 0)
    assert consume(b, "orders", "g", 3) == ([f"v{i}" for i in range(3)], 0)
    theirs = f"persistent://{tenants.names['a']}/orders"
    missing = f"persistent://{tenants.names['a']}/no-such-topic"
    # b cannot see, write, read, commit on or delete a's topics; a topic of a's that
    # does not exist is refused exactly alike
    assert "orders" in AdminClient(b).list_topics(timeout=20).topics
    assert theirs not in AdminClient(b).list_topics(timeout=20).topics
    assert metadata_error(b, theirs) == REFUSED
    assert metadata_error(b, missing) == REFUSED
    assert produce(b, theirs, 1) == [REFUSED]
    seen, error = consume(b, theirs, "g", 1)
    assert (seen, error) == ([], REFUSED)
    assert commit_error(b, theirs, "g") == REFUSED
    assert delete_error(b, theirs) == REFUSED
    # a's group g is untouched by b's group g: it resumes where a committed
    assert consume(a, "orders", "g", 1) == ([], 0)


def test_refused_tokens(tenants: Tenants) -> None:
    role = f"user-a-{tenants.suffix}"
    wrong_key = jwt.encode({"sub": role}, b"w" * 32, algorithm="HS256")
    unsigned = jwt.encode({"sub": role}, None, algorithm="none")
    expired = tenants.token(role, exp=int(time.time()) - 60)
    for token in (wrong_key, unsigned, expired):
        assert auth_error(tenants.conf("a", token)) == KafkaError._AUTHENTICATION
    # a valid token of a role with no permission in the tenant it names
    stranger = tenants.conf("a", tenants.token("stranger"))
    assert produce(stranger, "orders", 1) == [REFUSED]


def test_a_scram_user_made_with_kafka_configs_signs_in(tenants: Tenants, tmp_path: Path) -> None:
    ops = tmp_path / "ops.properties"
    token = tenants.token(f"ops-{tenants.suffix}")  # a superuser of kop (KOP_SUPERUSER_ROLES)
    ops.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{tenants.names["a"]}" password="token:{token}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={tenants.ca.cert_file}\n"
    )
    user = f"scram-{tenants.suffix}"
    made = subprocess.run(
        [sys.executable, str(REPO / "tools" / "kafka.py"), "tool", "configs",
         "--bootstrap-server", f"localhost:{tenants.port}", "--command-config", str(ops),
         "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=s3cret]",
         "--entity-type", "users", "--entity-name", user],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    scram = {**tenants.conf("a"), "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": user,
             "sasl.password": "s3cret"}  # fmt: skip
    assert produce(scram, "scram-topic", 3) == [0, 0, 0]
    assert consume(scram, "scram-topic", "scram-group", 3) == (["v0", "v1", "v2"], 0)
    wrong = {**scram, "sasl.password": "nope"}
    assert auth_error(wrong) == KafkaError._AUTHENTICATION
