"""The mechanisms a listener offers, built once per gateway: what a SASL handshake may
name, each a factory of a fresh exchange per connection."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from functools import partial

from kop.sasl.mechanisms import OAUTHBEARER, PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAuthBearer, Plain
from kop.sasl.scram import ScramServer
from kop.sasl.scram_users import ScramUsers
from kop.sasl.session import MechanismFactory
from kop.security.tokens import TokenValidator
from kop.storage.naming import Namespace


def offered(
    names: Iterable[str],
    default: Namespace,
    system: Namespace,
    users: ScramUsers,
    tokens: TokenValidator | None,
) -> dict[str, MechanismFactory]:
    """PLAIN takes `token:<JWT>` passwords and SCRAM users' passwords; OAUTHBEARER
    tokens (offered only when tokens are configured); SCRAM-SHA-* the users kept in
    Pulsar. A SCRAM client naming a user that does not exist is shown salts derived
    from one secret per gateway, so the answer does not tell it the user is missing."""
    decoy = secrets.token_bytes(32)
    factories: dict[str, MechanismFactory] = {}
    for name in names:
        if name == PLAIN:
            factories[name] = partial(Plain, tokens, default, users.check_password, system)
        elif name == OAUTHBEARER and tokens is not None:
            factories[name] = partial(OAuthBearer, tokens, default, system)
        elif name in (SCRAM_SHA_256, SCRAM_SHA_512):
            factories[name] = partial(ScramServer, name, users.lookup, default, decoy)
    return factories
