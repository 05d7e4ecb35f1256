"""The SASL mechanisms and a connection's SASL state: Kafka's rules, and hostile
exchanges (truncated, oversized, wrong mechanism, garbage, replay) that end in a
clean refusal and never in an identity the credentials did not prove."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse

from kop.protocol.errors import ErrorCode
from kop.sasl.mechanisms import OAuthBearer, Plain
from kop.sasl.session import FAILED_MESSAGE, Answer, SaslSession, State
from kop.security.errors import AuthenticationFailed
from kop.security.tokens import TokenSettings, TokenValidator
from kop.storage.naming import Namespace
from tests.tls_material import TokenKeys

DEFAULT = Namespace("public", "default")
KEYS = TokenKeys(b"k" * 8 + bytes(range(24)), Path("/nonexistent"))
VALIDATOR = TokenValidator(TokenSettings(secret_key=KEYS.data_url))


def plain(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def bearer(token: str, **ext: str) -> bytes:
    pairs = "".join(f"{k}={v}\x01" for k, v in ext.items())
    return f"n,,\x01auth=Bearer {token}\x01{pairs}\x01".encode()


def test_plain_username_selects_tenant_and_namespace_and_the_token_the_role() -> None:
    mech = Plain(VALIDATOR, DEFAULT)
    token = KEYS.token("alice")
    cases = {
        "acme/orders": Namespace("acme", "orders"),
        "acme": Namespace("acme", "default"),
        "": DEFAULT,
    }
    for user, namespace in cases.items():
        step = Plain(VALIDATOR, DEFAULT).step(plain(user, "token:" + token))
        assert step.principal is not None
        assert (step.principal.role, step.principal.namespace) == ("alice", namespace)
    for bad in (
        plain("acme", token),  # no token: prefix
        plain("acme", "token:" + token, authzid="other"),
        plain("a/b/c", "token:" + token),
        plain("ac me", "token:" + token),
        b"only\0two",
        b"\xff\xfe\0a\0b",
    ):
        with pytest.raises(AuthenticationFailed):
            mech.step(bad)


def test_oauthbearer_tenant_extension_and_authzid() -> None:
    token = KEYS.token("bob")
    step = OAuthBearer(VALIDATOR, DEFAULT).step(bearer(token, tenant="acme/orders"))
    assert step.principal is not None
    assert (step.principal.role, step.principal.namespace) == ("bob", Namespace("acme", "orders"))
    assert (
        OAuthBearer(VALIDATOR, DEFAULT)
        .step(f"n,a=bob,\x01auth=Bearer {token}\x01\x01".encode())
        .principal
    )
    for bad in (
        f"n,a=eve,\x01auth=Bearer {token}\x01\x01".encode(),
        f"n,,\x01auth=Basic {token}\x01\x01".encode(),
        f"n,,\x01auth=Bearer {token}\x01".encode(),  # one ^A short
        f"y,,\x01auth=Bearer {token}\x01\x01".encode(),
        bearer(token, **{"b@d": "x"}),
        bearer("garbage"),
        b"",
    ):
        with pytest.raises(AuthenticationFailed):
            OAuthBearer(VALIDATOR, DEFAULT).step(bad)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_garbage_is_refused_cleanly(data: bytes) -> None:
    for mech in (Plain(VALIDATOR, DEFAULT), OAuthBearer(VALIDATOR, DEFAULT)):
        with pytest.raises(AuthenticationFailed):
            mech.step(data)


def session(max_reauth_ms: int = 0, clock: float = 1000.0) -> SaslSession:
    return SaslSession(
        {
            "PLAIN": lambda: Plain(VALIDATOR, DEFAULT),
            "OAUTHBEARER": lambda: OAuthBearer(VALIDATOR, DEFAULT),
        },
        max_reauth_ms,
        clock=lambda: clock,
    )


def test_kafka_order_of_a_sasl_exchange() -> None:
    s = session()
    answer = s.handshake("SCRAM-SHA-256")
    assert answer.close and answer.body.error_code == ErrorCode.unsupported_sasl_mechanism
    assert answer.body.mechanisms == ("OAUTHBEARER", "PLAIN")

    s = session()
    early = s.authenticate(plain("", "token:" + KEYS.token("a")))
    assert early.close and early.body.error_code == ErrorCode.illegal_sasl_state

    s = session()
    assert s.handshake("PLAIN").body.error_code == ErrorCode.none
    wrong = s.authenticate(plain("", "token:bad"))
    assert wrong.close and wrong.failed
    assert wrong.body.error_code == ErrorCode.sasl_authentication_failed
    assert wrong.body.error_message == FAILED_MESSAGE  # never which part was wrong
    assert s.state is State.CLOSED and s.principal is None


def test_session_lifetime_and_reauthentication() -> None:
    s = session(clock=time.time())
    s.handshake("PLAIN")
    ok = s.authenticate(plain("acme", "token:" + KEYS.token("a", expires_in_s=60)))
    assert 55_000 < _lifetime_ms(ok) <= 60_000 and s.authenticated
    # KIP-368: a new handshake of the same mechanism, the same principal
    assert s.handshake("PLAIN").body.error_code == ErrorCode.none
    assert s.authenticated  # requests still pass while re-authenticating
    again = s.authenticate(plain("acme", "token:" + KEYS.token("a", expires_in_s=600)))
    assert 595_000 < _lifetime_ms(again) <= 600_000
    # another principal, or another mechanism, is refused
    s.handshake("PLAIN")
    assert s.authenticate(plain("acme", "token:" + KEYS.token("b"))).failed
    s2 = session()
    s2.handshake("PLAIN")
    s2.authenticate(plain("", "token:" + KEYS.token("a")))
    assert s2.handshake("OAUTHBEARER").body.error_code == ErrorCode.illegal_sasl_state


def test_max_reauth_bounds_a_session_of_a_token_that_never_expires() -> None:
    s = session(max_reauth_ms=30_000)
    s.handshake("PLAIN")
    assert _lifetime_ms(s.authenticate(plain("", "token:" + KEYS.token("a")))) == 30_000


class SaslMachine(RuleBasedStateMachine):
    """Any sequence of SASL requests: the session is authenticated exactly when the
    last completed exchange presented a valid token after a handshake, and a
    refusal is final."""

    def __init__(self) -> None:
        super().__init__()
        self.session = session()
        self.closed = False
        self.expect_auth = False
        self.handshaken = False
        self.authenticated_with = ""

    @rule(mechanism=st.sampled_from(["PLAIN", "OAUTHBEARER", "GSSAPI", ""]))
    def handshake(self, mechanism: str) -> None:
        answer = self.session.handshake(mechanism)
        ok = not self.closed and not self.handshaken and mechanism in ("PLAIN", "OAUTHBEARER")
        if ok and self.expect_auth:
            ok = mechanism == self.authenticated_with  # re-authentication keeps the mechanism
        assert (answer.body.error_code == ErrorCode.none) == ok
        self.handshaken = ok
        self.mechanism = mechanism
        self.closed = self.closed or answer.close

    @rule(valid=st.booleans(), data=st.binary(max_size=64))
    def authenticate(self, valid: bool, data: bytes) -> None:
        mech = getattr(self, "mechanism", "")
        payload = data
        if valid:
            token = KEYS.token("a")
            payload = plain("", "token:" + token) if mech == "PLAIN" else bearer(token)
        answer = self.session.authenticate(payload)
        if self.closed or not self.handshaken or not valid:
            assert answer.close
            self.closed = True
            self.expect_auth = False
        else:
            assert answer.body.error_code == ErrorCode.none
            self.expect_auth = True
            self.authenticated_with = mech
        self.handshaken = False

    @invariant()
    def authenticated_only_when_proven(self) -> None:
        if self.closed:
            assert self.session.state is State.CLOSED and not self.session.authenticated
        else:
            assert self.session.authenticated == self.expect_auth


TestSaslMachine = SaslMachine.TestCase
TestSaslMachine.settings = settings(max_examples=200, stateful_step_count=12, deadline=None)


def _lifetime_ms(answer: Answer) -> float:
    body = answer.body
    assert isinstance(body, SaslAuthenticateResponse)
    return body.session_lifetime.total_seconds() * 1000
